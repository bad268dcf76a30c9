package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// S3Hint is the message tests give when no S3 server is configured.
const S3Hint = `S3 tests need a server: run eval "$(.ci/s3.sh start)"`

// S3Config is the test S3 server, from the environment .ci/s3.sh start
// prints.
type S3Config struct {
	// Endpoint is CKPT_TEST_S3_ENDPOINT, e.g. http://127.0.0.1:7070.
	Endpoint string
	// AccessKey is CKPT_TEST_S3_ACCESS_KEY.
	AccessKey string
	// SecretKey is CKPT_TEST_S3_SECRET_KEY.
	SecretKey string
}

// S3Env returns the test server's settings. When CKPT_TEST_S3_ENDPOINT is
// unset the test fails if the environment variable CI is non-empty (CI must
// not silently skip S3) and is skipped otherwise, with S3Hint either way.
func S3Env(t testing.TB) S3Config {
	t.Helper()
	c := S3Config{
		Endpoint:  os.Getenv("CKPT_TEST_S3_ENDPOINT"),
		AccessKey: os.Getenv("CKPT_TEST_S3_ACCESS_KEY"),
		SecretKey: os.Getenv("CKPT_TEST_S3_SECRET_KEY"),
	}
	if c.Endpoint == "" || c.AccessKey == "" || c.SecretKey == "" {
		if os.Getenv("CI") != "" {
			t.Fatal(S3Hint)
		}
		t.Skip(S3Hint)
	}
	return c
}

// S3Client returns an SDK client for the test server: static credentials,
// path-style addressing, region us-east-1.
func S3Client(t testing.TB) *s3.Client {
	t.Helper()
	c := S3Env(t)
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(c.Endpoint),
		UsePathStyle: true,
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(c.AccessKey, c.SecretKey, ""),
	})
}

// RandomName returns prefix followed by 12 random lowercase hex digits, a
// valid bucket name or key prefix.
func RandomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// S3Bucket creates a fresh bucket on the test server and returns a client and
// its name. Cleanup empties and removes the bucket (best-effort; failures are
// logged).
func S3Bucket(t testing.TB) (*s3.Client, string) {
	t.Helper()
	client := S3Client(t)
	bucket := RandomName("ckpt-test-")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket %s on %s: %v", bucket, S3Env(t).Endpoint, err)
	}
	t.Cleanup(func() { removeBucket(t, client, bucket) })
	return client, bucket
}

// S3 returns a store on a fresh bucket, rooted at a random prefix so that
// keys outside the root exist only if the store wrote them there.
func S3(t testing.TB) *storage.S3 {
	t.Helper()
	client, bucket := S3Bucket(t)
	return storage.NewS3FromClient(client, bucket, RandomName("root-"))
}

func removeBucket(t testing.TB, client *s3.Client, bucket string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Logf("cleanup: list %s: %v", bucket, err)
			return
		}
		if len(page.Contents) == 0 {
			continue
		}
		ids := make([]types.ObjectIdentifier, 0, len(page.Contents))
		for _, o := range page.Contents {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key})
		}
		if _, err := client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: aws.String(bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
		}); err != nil {
			t.Logf("cleanup: delete objects in %s: %v", bucket, err)
			return
		}
	}
	if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Logf("cleanup: delete bucket %s: %v", bucket, err)
	}
}
