package storage

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// noCredentials empties the AWS credential chain: no keys, no profile files; imds is the
// instance metadata endpoint the chain tries last ("" disables it).
func noCredentials(t *testing.T, imds string) {
	t.Helper()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	if imds == "" {
		t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	} else {
		t.Setenv("AWS_EC2_METADATA_DISABLED", "false")
		t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds)
	}
}

// captureStderr runs f with os.Stderr redirected and returns what was written there.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	func() {
		defer func() { os.Stderr = old }()
		f()
	}()
	w.Close()
	return <-done
}

// A web server that is not S3 answers 404 to everything: that is not "no such file" (which
// would read as an empty location) but a wrong endpoint.
func TestS3NotS3Endpoint(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	ctx := context.Background()
	s, err := Open(ctx, "s3://b/p", Options{S3Endpoint: srv.URL, S3PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	_, lerr := s.List(ctx, "")
	_, rerr := s.ReadFile(ctx, "x")
	for _, err := range []error{lerr, rerr} {
		var ns *NotS3Error
		if !errors.As(err, &ns) || errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v, want a NotS3Error", err)
		}
		if want := "the endpoint " + srv.URL + " answered 404 Not Found without an S3 error: it does not look like an S3 endpoint"; !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
}

// A real S3 server's 404s stay "does not exist" (versitygw: a missing key, a missing bucket).
func TestS3NotFoundOnS3(t *testing.T) {
	ep := os.Getenv("CKPT_TEST_S3_ENDPOINT")
	if ep == "" {
		if os.Getenv("CI") != "" {
			t.Fatal(`S3 tests need a server: run eval "$(.ci/s3.sh start)"`)
		}
		t.Skip(`S3 tests need a server: run eval "$(.ci/s3.sh start)"`)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", os.Getenv("CKPT_TEST_S3_ACCESS_KEY"))
	t.Setenv("AWS_SECRET_ACCESS_KEY", os.Getenv("CKPT_TEST_S3_SECRET_KEY"))
	ctx := context.Background()
	s, err := Open(ctx, "s3://ckpt-no-such-bucket/p", Options{S3Endpoint: ep, S3PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, ""); err == nil || !strings.Contains(err.Error(), "the bucket does not exist") {
		t.Errorf("List on a missing bucket = %v", err)
	}
	if _, err := s.Stat(ctx, "x"); err == nil || errors.As(err, new(*NotS3Error)) {
		t.Errorf("Stat on a missing bucket = %v", err)
	}
}

// No credentials anywhere: said as such, not "permission denied", and without the SDK's own
// log lines on stderr (its instance-metadata client warns when IMDS answers 403).
func TestS3NoCredentials(t *testing.T) {
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	defer imds.Close()
	endpoint := os.Getenv("CKPT_TEST_S3_ENDPOINT")
	if endpoint == "" {
		// The request never leaves the credential chain; any endpoint shows it.
		endpoint = imds.URL
	}
	for _, tc := range []struct{ name, imds string }{{"imds disabled", ""}, {"imds answers 403", imds.URL}} {
		t.Run(tc.name, func(t *testing.T) {
			noCredentials(t, tc.imds)
			var err error
			stderr := captureStderr(t, func() {
				var s Store
				s, err = Open(context.Background(), "s3://bucket/ckpt", Options{S3Endpoint: endpoint, S3PathStyle: true})
				if err == nil {
					_, err = s.List(context.Background(), "")
				}
			})
			var ce *S3CredentialsError
			if !errors.As(err, &ce) || errors.Is(err, fs.ErrPermission) {
				t.Fatalf("err = %v, want an S3CredentialsError", err)
			}
			if !strings.Contains(err.Error(), "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY") || strings.Contains(err.Error(), "permission denied") {
				t.Errorf("err = %v", err)
			}
			if stderr != "" {
				t.Errorf("stderr = %q, want nothing", stderr)
			}
		})
	}
}

// A location written wrong is ErrLocation (a usage error for the commands).
func TestOpenErrLocation(t *testing.T) {
	for _, uri := range []string{"", "s3://", "s3:///x", "s3:bucket", "gs:///p", "abfss://nocontainer", "viewfs://nn/p", "ftp://h/p", "file://host/x", "mem://"} {
		if _, err := Open(context.Background(), uri, Options{}); !errors.Is(err, ErrLocation) {
			t.Errorf("Open(%q) = %v, want ErrLocation", uri, err)
		}
	}
	if _, err := Open(context.Background(), "s3://b/p", Options{S3Endpoint: "localhost:9000"}); !errors.Is(err, ErrLocation) {
		t.Errorf("endpoint without a scheme: %v", err)
	}
}
