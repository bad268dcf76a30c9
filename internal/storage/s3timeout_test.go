package storage

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// silentServer accepts TCP connections and never answers; it returns its address.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never read or written
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// An S3 endpoint that accepts connections and never answers: every store call fails after the
// per-request timeout with an error naming the endpoint, instead of hanging.
func TestS3EndpointNeverAnswers(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	addr := silentServer(t)
	ctx := context.Background()
	s, err := Open(ctx, "s3://bucket/ckpt", Options{S3Endpoint: "http://" + addr, S3PathStyle: true, S3Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
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
		select {
		case err = <-done:
		case <-time.After(2 * time.Minute): // the hang is the failure under test
			t.Fatalf("%s: no answer after 2 minutes", tc.op)
		}
		var te *S3TimeoutError
		if !errors.As(err, &te) || te.Endpoint != "http://"+addr || te.Timeout != 100*time.Millisecond {
			t.Fatalf("%s: %v, want an S3TimeoutError naming http://%s", tc.op, err, addr)
		}
		if msg := err.Error(); !strings.Contains(msg, "the S3 endpoint http://"+addr+" did not answer within 100ms") {
			t.Errorf("%s: message = %s", tc.op, msg)
		}
	}
}

func TestS3TimeoutDefault(t *testing.T) {
	t.Setenv("CKPT_S3_TIMEOUT", "")
	if d, err := s3Timeout(Options{}); err != nil || d != DefaultS3Timeout {
		t.Errorf("default = %v %v", d, err)
	}
	t.Setenv("CKPT_S3_TIMEOUT", "45s")
	if d, err := s3Timeout(Options{}); err != nil || d != 45*time.Second {
		t.Errorf("env = %v %v", d, err)
	}
	if d, err := s3Timeout(Options{S3Timeout: time.Second}); err != nil || d != time.Second {
		t.Errorf("option over env = %v %v", d, err)
	}
	t.Setenv("CKPT_S3_TIMEOUT", "soon")
	if _, err := s3Timeout(Options{}); err == nil || !strings.Contains(err.Error(), "CKPT_S3_TIMEOUT") {
		t.Errorf("bad env: %v", err)
	}
}
