package storage_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// isolateAWS keeps the developer's ~/.aws and AWS_* environment out of a test.
func isolateAWS(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	for _, k := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
		"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
		"AWS_SESSION_TOKEN", "CKPT_S3_PATH_STYLE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

func TestOpenLocal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir)
	wd, _ := os.Getwd() // dir may differ from wd through symlinks (macOS /var)
	cases := []struct{ uri, root string }{
		{dir, dir},
		{filepath.Join(dir, "ck"), filepath.Join(dir, "ck")},
		{"rel/ck", filepath.Join(wd, "rel", "ck")},
		{"./ck", filepath.Join(wd, "ck")},
		{"file://" + filepath.ToSlash(dir) + "/ck", filepath.Join(dir, "ck")},
		{"file:" + filepath.ToSlash(dir) + "/ck", filepath.Join(dir, "ck")},
		{"file://localhost" + filepath.ToSlash(dir) + "/ck", filepath.Join(dir, "ck")},
	}
	for _, c := range cases {
		s, err := storage.Open(ctx, c.uri, storage.Options{})
		if err != nil {
			t.Errorf("Open(%q): %v", c.uri, err)
			continue
		}
		l, ok := s.(*storage.Local)
		if !ok {
			t.Errorf("Open(%q) = %T, want *storage.Local", c.uri, s)
			continue
		}
		if l.Root() != c.root || l.URI() != c.uri {
			t.Errorf("Open(%q): Root %q URI %q, want Root %q and the URI as typed", c.uri, l.Root(), l.URI(), c.root)
		}
	}
	// A store opened through file:// writes where a plain path reads.
	s, _ := storage.Open(ctx, "file://"+filepath.ToSlash(dir)+"/ck2", storage.Options{})
	if err := s.WriteFile(ctx, "offsets/0", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ck2", "offsets", "0")); err != nil || string(b) != "v1" {
		t.Fatalf("%q, %v", b, err)
	}
}

func TestOpenMem(t *testing.T) {
	ctx := context.Background()
	name := storetest.RandomName("open-")
	t.Cleanup(func() { storage.ForgetMem(name) })
	a, err := storage.Open(ctx, "mem://"+name, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.WriteFile(ctx, "sub/offsets/0", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	b, err := storage.Open(ctx, "mem://"+name+"/sub/", storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.(*storage.Mem); !ok || b.URI() != "mem://"+name+"/sub/" {
		t.Fatalf("Open(mem) = %T %q", b, b.URI())
	}
	if got, err := b.ReadFile(ctx, "offsets/0"); err != nil || string(got) != "v1" {
		t.Fatalf("same name, sub view: %q, %v", got, err)
	}
	if got, err := storage.MemNamed(name).ReadFile(ctx, "sub/offsets/0"); err != nil || string(got) != "v1" {
		t.Fatalf("MemNamed: %q, %v", got, err)
	}
	storage.ForgetMem(name)
	c, _ := storage.Open(ctx, "mem://"+name, storage.Options{})
	if es, _ := c.Walk(ctx, ""); len(es) != 0 {
		t.Fatalf("after ForgetMem: %v", es)
	}
}

func TestOpenS3Parsing(t *testing.T) {
	isolateAWS(t)
	ctx := context.Background()
	cases := []struct{ uri, bucket, prefix string }{
		{"s3://bucket", "bucket", ""},
		{"s3://bucket/", "bucket", ""},
		{"s3://bucket/ck", "bucket", "ck"},
		{"s3://bucket/deep/prefix/", "bucket", "deep/prefix"},
		{"s3a://bucket/deep/prefix", "bucket", "deep/prefix"},
		{"S3://bucket/x", "bucket", "x"},
	}
	for _, c := range cases {
		st, err := storage.Open(ctx, c.uri, storage.Options{})
		if err != nil {
			t.Errorf("Open(%q): %v", c.uri, err)
			continue
		}
		s, ok := st.(*storage.S3)
		if !ok {
			t.Errorf("Open(%q) = %T", c.uri, st)
			continue
		}
		if s.Bucket() != c.bucket || s.Prefix() != c.prefix || s.URI() != c.uri {
			t.Errorf("Open(%q) = bucket %q prefix %q uri %q", c.uri, s.Bucket(), s.Prefix(), s.URI())
		}
	}
}

func TestOpenErrors(t *testing.T) {
	isolateAWS(t)
	ctx := context.Background()
	cases := map[string]string{
		"":                   "empty",
		"s3://":              "no bucket",
		"s3:///x":            "no bucket",
		"s3:bucket":          "want s3://bucket/prefix",
		"mem://":             "no name",
		"viewfs://ns/ck":     "hdfs dfs -get",
		"hdfs:/ck":           "want hdfs://namenode:port/path",
		"webhdfs:///ck":      "has no host",
		"hdfs://nn:port/ck":  "bad host:port",
		"gs://":              "want gs://bucket/prefix",
		"gs:bucket/ck":       "want gs://bucket/prefix",
		"wasbs://c@a/ck":     "bad Azure URI",
		"ftp://host/x":       `unsupported location scheme "ftp"`,
		"file://otherhost/x": "only local files",
	}
	for uri, want := range cases {
		_, err := storage.Open(ctx, uri, storage.Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %v, want an error containing %q", uri, err, want)
		}
	}
	_, err := storage.Open(ctx, "s3://b/p", storage.Options{S3Endpoint: "127.0.0.1:7070"})
	if err == nil || !strings.Contains(err.Error(), "needs a scheme") {
		t.Errorf("endpoint without scheme: %v", err)
	}
}

func TestS3Region(t *testing.T) {
	ctx := context.Background()
	region := func(opts storage.Options) string {
		t.Helper()
		st, err := storage.Open(ctx, "s3://b/p", opts)
		if err != nil {
			t.Fatal(err)
		}
		return st.(*storage.S3).Client().Options().Region
	}
	isolateAWS(t)
	if got := region(storage.Options{}); got != "us-east-1" {
		t.Errorf("default region %q, want us-east-1", got)
	}
	t.Setenv("AWS_REGION", "ap-south-1")
	if got := region(storage.Options{}); got != "ap-south-1" {
		t.Errorf("AWS_REGION: region %q", got)
	}
	if got := region(storage.Options{S3Region: "eu-west-1"}); got != "eu-west-1" {
		t.Errorf("Options.S3Region: region %q", got)
	}
	if st, _ := storage.Open(ctx, "s3://b/p", storage.Options{}); st.(*storage.S3).Client().Options().UsePathStyle {
		t.Error("path style on by default")
	}
	t.Setenv("CKPT_S3_PATH_STYLE", "true")
	if st, _ := storage.Open(ctx, "s3://b/p", storage.Options{}); !st.(*storage.S3).Client().Options().UsePathStyle {
		t.Error("CKPT_S3_PATH_STYLE=true ignored")
	}
}

// TestS3OpenWithEnv goes through Open exactly as the CLI does, with
// credentials and endpoint from the standard AWS environment variables.
func TestS3OpenWithEnv(t *testing.T) {
	cfg := storetest.S3Env(t)
	client, bucket := storetest.S3Bucket(t)
	isolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", cfg.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", cfg.SecretKey)
	t.Setenv("AWS_ENDPOINT_URL", cfg.Endpoint) // the SDK's own handling, no Options.S3Endpoint
	t.Setenv("CKPT_S3_PATH_STYLE", "true")
	ctx := context.Background()
	uri := "s3://" + bucket + "/deep/prefix/"
	st, err := storage.Open(ctx, uri, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WriteFile(ctx, "offsets/0", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("deep/prefix/offsets/0")})
	if err != nil {
		t.Fatalf("object not at deep/prefix/offsets/0: %v", err)
	}
	b, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(b) != "v1" {
		t.Fatalf("object body %q", b)
	}
	// AWS_ENDPOINT_URL_S3 wins over AWS_ENDPOINT_URL, and Options over both.
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	t.Setenv("AWS_ENDPOINT_URL_S3", cfg.Endpoint)
	st, _ = storage.Open(ctx, uri, storage.Options{})
	if _, err := st.Stat(ctx, "offsets/0"); err != nil {
		t.Errorf("with AWS_ENDPOINT_URL_S3: %v", err)
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
	st, _ = storage.Open(ctx, uri, storage.Options{S3Endpoint: cfg.Endpoint})
	if _, err := st.Stat(ctx, "offsets/0"); err != nil {
		t.Errorf("with Options.S3Endpoint: %v", err)
	}
}

func TestS3WrongSecret(t *testing.T) {
	cfg := storetest.S3Env(t)
	_, bucket := storetest.S3Bucket(t)
	isolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", cfg.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
	ctx := context.Background()
	uri := "s3://" + bucket + "/ck"
	st, err := storage.Open(ctx, uri, storage.Options{S3Endpoint: cfg.Endpoint, S3PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.List(ctx, "offsets")
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("List with a wrong secret = %v, want fs.ErrPermission", err)
	}
	for _, want := range []string{"list " + uri + "/offsets", "SignatureDoesNotMatch", "AWS_SECRET_ACCESS_KEY"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	t.Log(err)
	if err := st.WriteFile(ctx, "offsets/0", []byte("x")); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("WriteFile with a wrong secret = %v", err)
	}
}

func TestS3MissingBucket(t *testing.T) {
	client := storetest.S3Client(t)
	st := storage.NewS3FromClient(client, storetest.RandomName("nobucket-"), "ck")
	_, err := st.List(context.Background(), "")
	if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "bucket does not exist") {
		t.Fatalf("List on a missing bucket = %v, want a bucket error that is not fs.ErrNotExist", err)
	}
}

// TestS3ListingSkipsForeignKeys: keys a path cannot name (directory markers)
// and keys of sibling prefixes never show up.
func TestS3ListingSkipsForeignKeys(t *testing.T) {
	client, bucket := storetest.S3Bucket(t)
	ctx := context.Background()
	// versitygw's posix backend maps keys to files, so a few odd keys AWS
	// allows ("ck" next to "ck/...") cannot be created here.
	for _, k := range []string{"ck/offsets/", "ck/offsets/0", "ck/a/", "ck2/offsets/9", "ckX"} {
		body := "1"
		if strings.HasSuffix(k, "/") {
			body = "" // a directory marker, as S3 consoles and Hadoop S3A create
		}
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: bytes.NewReader([]byte(body))}); err != nil {
			t.Fatalf("put %q: %v", k, err)
		}
	}
	st := storage.NewS3FromClient(client, bucket, "/ck/")
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

// headLies answers every HeadObject with 404, so WriteFile's pre-check
// passes and the conditional PutObject alone must refuse the overwrite, as in
// a race between the check and the put.
type headLies struct{ next s3.HTTPClient }

func (h headLies) Do(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodHead {
		return &http.Response{StatusCode: 404, Status: "404 Not Found", Header: http.Header{},
			Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	}
	return h.next.Do(r)
}

func TestS3ConditionalPutRefusesOverwrite(t *testing.T) {
	cfg := storetest.S3Env(t)
	_, bucket := storetest.S3Bucket(t)
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String(cfg.Endpoint), UsePathStyle: true, Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, ""),
		HTTPClient:  headLies{next: http.DefaultClient},
	})
	st := storage.NewS3FromClient(client, bucket, "ck")
	ctx := context.Background()
	if err := st.WriteFile(ctx, "commits/3", []byte("first")); err != nil {
		t.Fatal(err)
	}
	err := st.WriteFile(ctx, "commits/3", []byte("second"))
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second WriteFile = %v, want fs.ErrExist from the 412", err)
	}
	if b, err := st.ReadFile(ctx, "commits/3"); err != nil || string(b) != "first" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
}

func TestS3VirtualHostHint(t *testing.T) {
	isolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	ctx := context.Background()
	st, err := storage.Open(ctx, "s3://bucket/ck", storage.Options{S3Endpoint: "http://s3.example.invalid:7070"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.List(ctx, "")
	if err == nil || !strings.Contains(err.Error(), "CKPT_S3_PATH_STYLE=true") {
		t.Fatalf("List via an unresolvable virtual host = %v, want a path-style hint", err)
	}
}
