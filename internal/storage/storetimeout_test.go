package storage

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// checkTimeouts runs a few calls against a store whose endpoint never answers: each must fail
// with a *TimeoutError naming the endpoint and the limit, instead of hanging.
func checkTimeouts(t *testing.T, s Store, kind, endpoint string, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	for _, tc := range []struct {
		op string
		do func() error
	}{
		{"list", func() error { _, err := s.List(ctx, "offsets"); return err }},
		{"read", func() error { _, err := s.ReadFile(ctx, "offsets/0"); return err }},
		{"stat", func() error { _, err := s.Stat(ctx, "metadata"); return err }},
		{"write", func() error { return s.WriteFile(ctx, "x", []byte("x")) }},
	} {
		done := make(chan error, 1)
		go func() { done <- tc.do() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(2 * time.Minute): // the hang is the failure under test
			t.Fatalf("%s: no answer after 2 minutes", tc.op)
		}
		var te *TimeoutError
		if !errors.As(err, &te) || te.Endpoint != endpoint || te.Timeout != timeout || te.Store != kind {
			t.Fatalf("%s: %v, want a TimeoutError naming %s %s", tc.op, err, kind, endpoint)
		}
		want := "the " + kind + " endpoint " + endpoint + " did not answer within " + timeout.String()
		if msg := err.Error(); !strings.Contains(msg, want) || !strings.Contains(msg, "--store-timeout") {
			t.Errorf("%s: message = %s", tc.op, msg)
		}
	}
}

func TestGCSEndpointNeverAnswers(t *testing.T) {
	addr := silentServer(t)
	t.Setenv("STORAGE_EMULATOR_HOST", addr)
	s, err := Open(context.Background(), "gs://bucket/ckpt", Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	checkTimeouts(t, s, "GCS", "http://"+addr, 100*time.Millisecond)
}

func TestStoreTimeoutDefault(t *testing.T) {
	t.Setenv("CKPT_STORE_TIMEOUT", "")
	t.Setenv("CKPT_S3_TIMEOUT", "")
	if d, err := storeTimeout(Options{}); err != nil || d != DefaultTimeout {
		t.Errorf("default = %v %v", d, err)
	}
	t.Setenv("CKPT_STORE_TIMEOUT", "45s")
	if d, err := storeTimeout(Options{}); err != nil || d != 45*time.Second {
		t.Errorf("env = %v %v", d, err)
	}
	// S3 falls back on the generic setting when it has none of its own.
	if d, err := s3Timeout(Options{}); err != nil || d != 45*time.Second {
		t.Errorf("S3 with CKPT_STORE_TIMEOUT = %v %v", d, err)
	}
	if d, err := s3Timeout(Options{S3Timeout: time.Second}); err != nil || d != time.Second {
		t.Errorf("S3 option over the generic env = %v %v", d, err)
	}
	if d, err := storeTimeout(Options{Timeout: time.Second}); err != nil || d != time.Second {
		t.Errorf("option over env = %v %v", d, err)
	}
	t.Setenv("CKPT_STORE_TIMEOUT", "soon")
	if _, err := storeTimeout(Options{}); err == nil || !strings.Contains(err.Error(), "CKPT_STORE_TIMEOUT") {
		t.Errorf("bad env: %v", err)
	}
}

func TestAzureEndpointNeverAnswers(t *testing.T) {
	addr := silentServer(t)
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=a2V5;BlobEndpoint=http://"+addr+"/acct;")
	s, err := Open(context.Background(), "wasbs://c@acct.blob.core.windows.net/ckpt", Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	checkTimeouts(t, s, "Azure Blob Storage", "http://"+addr, 100*time.Millisecond)
}

func TestHDFSEndpointNeverAnswers(t *testing.T) {
	addr := silentServer(t)
	s, err := Open(context.Background(), "webhdfs://"+addr+"/ckpt", Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	checkTimeouts(t, s, "WebHDFS", "http://"+addr, 100*time.Millisecond)
}
