package storetest

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	gcs "cloud.google.com/go/storage"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// GCSHint is the message tests give when no GCS emulator is configured.
const GCSHint = `GCS tests need fake-gcs-server: run eval "$(.ci/gcs.sh start)"`

// GCSEnv returns the test emulator's endpoint, CKPT_TEST_GCS_ENDPOINT (e.g.
// http://127.0.0.1:4443). When it is unset the test fails if CI is set and is skipped
// otherwise, with GCSHint either way.
func GCSEnv(t testing.TB) string {
	t.Helper()
	return need(t, "CKPT_TEST_GCS_ENDPOINT", GCSHint)
}

// need returns the environment variable k, failing the test in CI (CI must not silently skip
// a store) or skipping it elsewhere when k is unset.
func need(t testing.TB, k, hint string) string {
	t.Helper()
	v := os.Getenv(k)
	if v == "" {
		if os.Getenv("CI") != "" {
			t.Fatal(hint)
		}
		t.Skip(hint)
	}
	return v
}

// GCSClient returns a client for the test emulator, without credentials. (Open reaches the
// emulator through STORAGE_EMULATOR_HOST instead, which a test sets with t.Setenv.)
func GCSClient(t testing.TB) *gcs.Client {
	t.Helper()
	endpoint := GCSEnv(t)
	client, err := gcs.NewClient(context.Background(), option.WithEndpoint(endpoint+"/storage/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// GCSBucket creates a fresh bucket on the test emulator and returns a client and its name.
// Cleanup empties and removes the bucket (best-effort; failures are logged).
func GCSBucket(t testing.TB) (*gcs.Client, string) {
	t.Helper()
	client := GCSClient(t)
	bucket := RandomName("ckpt-test-")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := client.Bucket(bucket).Create(ctx, "ckpt-test", nil); err != nil {
		t.Fatalf("create bucket %s on %s: %v", bucket, GCSEnv(t), err)
	}
	t.Cleanup(func() { removeGCSBucket(t, client, bucket) })
	return client, bucket
}

// GCS returns a store on a fresh bucket, rooted at a random prefix so that objects outside
// the root exist only if the store wrote them there.
func GCS(t testing.TB) *storage.GCS {
	t.Helper()
	client, bucket := GCSBucket(t)
	return storage.NewGCSFromClient(client, bucket, RandomName("root-"))
}

func removeGCSBucket(t testing.TB, client *gcs.Client, bucket string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := client.Bucket(bucket)
	it := b.Objects(ctx, nil)
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Logf("cleanup: list %s: %v", bucket, err)
			return
		}
		if err := b.Object(a.Name).Delete(ctx); err != nil {
			t.Logf("cleanup: delete %s/%s: %v", bucket, a.Name, err)
		}
	}
	if err := b.Delete(ctx); err != nil {
		t.Logf("cleanup: delete bucket %s: %v", bucket, err)
	}
}
