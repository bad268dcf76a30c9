package storage_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

func TestGCS(t *testing.T) {
	storetest.GCSEnv(t) // skip (or fail in CI) once, not per subtest
	storetest.RunStoreTests(t, func(t *testing.T) storage.Store { return storetest.GCS(t) })
}

// TestGCSBucketRoot covers a store on a whole bucket (no prefix).
func TestGCSBucketRoot(t *testing.T) {
	storetest.GCSEnv(t)
	storetest.RunStoreTests(t, func(t *testing.T) storage.Store {
		client, bucket := storetest.GCSBucket(t)
		return storage.NewGCSFromClient(client, bucket, "")
	})
}

// TestGCSOpenWithEmulatorHost goes through Open as the CLI does: STORAGE_EMULATOR_HOST (here
// without a scheme, as the Google libraries document it) sends every request to the emulator.
func TestGCSOpenWithEmulatorHost(t *testing.T) {
	endpoint := storetest.GCSEnv(t)
	client, bucket := storetest.GCSBucket(t)
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(endpoint, "http://"))
	ctx := context.Background()
	uri := "gs://" + bucket + "/deep/prefix/"
	st, err := storage.Open(ctx, uri, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, ok := st.(*storage.GCS)
	if !ok || g.URI() != uri || g.Bucket() != bucket || g.Prefix() != "deep/prefix" {
		t.Fatalf("Open(%q) = %T %+v", uri, st, st)
	}
	if err := st.WriteFile(ctx, "offsets/0", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	r, err := client.Bucket(bucket).Object("deep/prefix/offsets/0").NewReader(ctx)
	if err != nil {
		t.Fatalf("object not at deep/prefix/offsets/0: %v", err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "v1" {
		t.Fatalf("object body %q", b)
	}
	if err := st.WriteFile(ctx, "offsets/0", []byte("v2")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second write = %v, want fs.ErrExist", err)
	}
}

// TestGCSPreconditionRefusesOverwrite: the upload itself carries DoesNotExist, so an object
// written behind the store's back (no listing or stat in between) is not replaced.
func TestGCSPreconditionRefusesOverwrite(t *testing.T) {
	client, bucket := storetest.GCSBucket(t)
	ctx := context.Background()
	w := client.Bucket(bucket).Object("ck/commits/3").NewWriter(ctx)
	if _, err := w.Write([]byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st := storage.NewGCSFromClient(client, bucket, "ck")
	err := st.WriteFile(ctx, "commits/3", []byte("second"))
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "write gs://"+bucket+"/ck/commits/3") {
		t.Fatalf("WriteFile over an existing object = %v, want fs.ErrExist naming the location", err)
	}
	if b, err := st.ReadFile(ctx, "commits/3"); err != nil || string(b) != "first" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
}

func TestGCSMissingBucket(t *testing.T) {
	client := storetest.GCSClient(t)
	st := storage.NewGCSFromClient(client, storetest.RandomName("nobucket-"), "ck")
	_, err := st.List(context.Background(), "")
	if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "bucket does not exist") {
		t.Fatalf("List on a missing bucket = %v, want a bucket error that is not fs.ErrNotExist", err)
	}
}

// TestGCSListingSkipsForeignObjects: names a path cannot name (directory markers, "//") and
// objects of sibling prefixes never show up.
func TestGCSListingSkipsForeignObjects(t *testing.T) {
	client, bucket := storetest.GCSBucket(t)
	ctx := context.Background()
	for _, k := range []string{"ck/offsets/", "ck/offsets/0", "ck/a/", "ck//x", "ck2/offsets/9", "ckX"} {
		w := client.Bucket(bucket).Object(k).NewWriter(ctx)
		if !strings.HasSuffix(k, "/") {
			_, _ = w.Write([]byte("1"))
		}
		if err := w.Close(); err != nil {
			t.Fatalf("put %q: %v", k, err)
		}
	}
	st := storage.NewGCSFromClient(client, bucket, "/ck/")
	es, err := st.Walk(ctx, "")
	if err != nil || len(es) != 1 || es[0].Path != "offsets/0" {
		t.Fatalf("Walk = %+v, %v", es, err)
	}
	es, err = st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Path)
	}
	if strings.Join(got, ",") != "a,offsets" {
		t.Fatalf("List = %+v", es)
	}
	es, err = st.List(ctx, "offsets")
	if err != nil || len(es) != 1 || es[0].Path != "offsets/0" {
		t.Fatalf("List(offsets) = %+v, %v", es, err)
	}
}
