package storage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// remoteKinds are the stores over HTTP, as the stall tests open them.
var remoteKinds = []string{"S3", "GCS", "Azure Blob Storage", "WebHDFS"}

// openRemote opens a store of kind whose endpoint is addr (host:port) with timeout as its limit.
func openRemote(t *testing.T, kind, addr string, timeout time.Duration) Store {
	t.Helper()
	ctx := context.Background()
	var s Store
	var err error
	switch kind {
	case "S3":
		t.Setenv("AWS_ACCESS_KEY_ID", "test")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
		t.Setenv("AWS_REGION", "us-east-1")
		t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
		s, err = Open(ctx, "s3://bucket/ckpt", Options{S3Endpoint: "http://" + addr, S3PathStyle: true, S3Timeout: timeout})
	case "GCS":
		t.Setenv("STORAGE_EMULATOR_HOST", addr)
		s, err = Open(ctx, "gs://bucket/ckpt", Options{Timeout: timeout})
	case "Azure Blob Storage":
		t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=a2V5;BlobEndpoint=http://"+addr+"/acct;")
		s, err = Open(ctx, "wasbs://c@acct.blob.core.windows.net/ckpt", Options{Timeout: timeout})
	case "WebHDFS":
		s, err = Open(ctx, "webhdfs://"+addr+"/ckpt", Options{Timeout: timeout})
	default:
		t.Fatalf("unknown kind %s", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// timeoutOf returns the store's timeout error in err: its endpoint, limit and whether the body
// stalled.
func timeoutOf(err error) (endpoint string, limit time.Duration, stalledBody, ok bool) {
	var te *TimeoutError
	var s3e *S3TimeoutError
	switch {
	case errors.As(err, &te):
		return te.Endpoint, te.Timeout, te.Stalled(), true
	case errors.As(err, &s3e):
		return s3e.Endpoint, s3e.Timeout, s3e.Stalled(), true
	}
	return "", 0, false, false
}

// misbehave serves every request with a 200 whose body is n spaces announced by Content-Length
// (a valid start of a JSON or XML listing, so a listing waits for more too), of which it sends first at once and then one byte every gap (gap 0: none, the
// body stalls until the client gives up). The headers look like each store's.
func misbehave(t *testing.T, n, first int, gap time.Duration) *httptest.Server {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("Content-Length", strconv.Itoa(n))
		h.Set("Content-Type", "application/octet-stream")
		h.Set("x-amz-request-id", "stall")
		h.Set("x-ms-request-id", "stall")
		h.Set("x-ms-version", "2023-11-03")
		h.Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(bytes.Repeat([]byte(" "), first))
		w.(http.Flusher).Flush()
		for sent := first; sent < n; sent++ {
			if gap == 0 {
				break
			}
			select {
			case <-r.Context().Done():
				return
			case <-stop:
				return
			case <-time.After(gap):
			}
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
		select { // a stalled body: held until the client hangs up
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv
}

// within runs do and fails the test if it has not returned after limit: the hang is the
// failure under test.
func within(t *testing.T, limit time.Duration, what string, do func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- do() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("%s: still waiting after %s: the read has no deadline", what, limit)
		return nil
	}
}

// A server that sends the response headers and then stalls the body: reading the file, whole
// or streamed, fails with a timeout error naming the endpoint and saying the answer stopped,
// instead of hanging (before the idle-read deadline, every store hung until killed).
func TestStoresBodyStalls(t *testing.T) {
	const idle = 300 * time.Millisecond
	for _, kind := range remoteKinds {
		t.Run(kind, func(t *testing.T) {
			srv := misbehave(t, 1000, 10, 0)
			s := openRemote(t, kind, strings.TrimPrefix(srv.URL, "http://"), idle)
			ctx := context.Background()
			for _, tc := range []struct {
				op string
				do func() error
			}{
				{"read", func() error { _, err := s.ReadFile(ctx, "offsets/0"); return err }},
				{"open", func() error {
					r, err := s.Open(ctx, "offsets/0")
					if err != nil {
						return err
					}
					defer r.Close()
					_, err = io.ReadAll(r)
					return err
				}},
				{"list", func() error { _, err := s.List(ctx, "offsets"); return err }},
			} {
				err := within(t, 20*time.Second, tc.op, tc.do)
				ep, limit, st, ok := timeoutOf(err)
				if !ok || ep != srv.URL || limit != idle || !st {
					t.Errorf("%s: %v, want a timeout error naming %s, the limit %s and a stalled answer", tc.op, err, srv.URL, idle)
					continue
				}
				if msg := err.Error(); !strings.Contains(msg, "endpoint "+srv.URL+" stopped sending an answer: no data within "+idle.String()) {
					t.Errorf("%s: message = %s", tc.op, msg)
				}
			}
		})
	}
}

// A trickle slower than the idle-read limit fails the same way; one faster than it is data
// arriving and is read to the end, even when the whole body takes longer than the limit (a large
// state file on a slow link is not cut off).
func TestStoresBodyTrickles(t *testing.T) {
	for _, kind := range remoteKinds {
		t.Run(kind, func(t *testing.T) {
			t.Run("slower than the limit", func(t *testing.T) {
				const idle = 200 * time.Millisecond
				srv := misbehave(t, 20, 2, 3*time.Second)
				s := openRemote(t, kind, strings.TrimPrefix(srv.URL, "http://"), idle)
				err := within(t, 20*time.Second, "read", func() error { _, err := s.ReadFile(context.Background(), "offsets/0"); return err })
				if ep, _, st, ok := timeoutOf(err); !ok || ep != srv.URL || !st {
					t.Errorf("read: %v, want a stalled-answer timeout naming %s", err, srv.URL)
				}
			})
			t.Run("faster than the limit", func(t *testing.T) {
				const idle = 1500 * time.Millisecond
				srv := misbehave(t, 60, 1, 30*time.Millisecond) // about 1.8s in all
				s := openRemote(t, kind, strings.TrimPrefix(srv.URL, "http://"), idle)
				start := time.Now()
				var b []byte
				err := within(t, 30*time.Second, "read", func() error {
					var err error
					b, err = s.ReadFile(context.Background(), "offsets/0")
					return err
				})
				if err != nil || string(b) != strings.Repeat(" ", 60) {
					t.Fatalf("read = %q, %v; want the 60 bytes", b, err)
				}
				if el := time.Since(start); el < idle {
					t.Fatalf("the trickle took %s, under the limit %s: the test shows nothing", el, idle)
				}
			})
		})
	}
}

// An endpoint that never answers, with a 1s limit: each call gives up after about 1s in all,
// not 1s per attempt (3 attempts and the backoff between them took S3, GCS and Azure 3-7s, while
// the error said "within 1s"). The bound leaves 1.5s for a loaded machine.
func TestStoresDeadlineCoversAttempts(t *testing.T) {
	const limit = time.Second
	const bound = 2500 * time.Millisecond
	for _, kind := range remoteKinds {
		t.Run(kind, func(t *testing.T) {
			addr := silentServer(t)
			s := openRemote(t, kind, addr, limit)
			ctx := context.Background()
			for _, tc := range []struct {
				op string
				do func() error
			}{
				{"list", func() error { _, err := s.List(ctx, "offsets"); return err }},
				{"read", func() error { _, err := s.ReadFile(ctx, "offsets/0"); return err }},
				{"write", func() error { return s.WriteFile(ctx, "x", []byte("x")) }},
			} {
				start := time.Now()
				err := within(t, 2*time.Minute, tc.op, tc.do)
				el := time.Since(start)
				if ep, l, st, ok := timeoutOf(err); !ok || ep != "http://"+addr || l != limit || st {
					t.Fatalf("%s: %v, want a timeout naming http://%s and %s", tc.op, err, addr, limit)
				}
				if el < limit || el > bound {
					t.Errorf("%s: gave up after %s; want about %s (at most %s)", tc.op, el.Round(time.Millisecond), limit, bound)
				}
			}
		})
	}
}

// Sending a large file to a server that takes it slowly, for longer than the limit but never
// pausing that long, is not a timeout: the answer deadline waits for the body to be sent.
func TestStoresSlowUploadIsNotATimeout(t *testing.T) {
	const limit = 700 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 256<<10)
		for {
			_, err := io.ReadFull(r.Body, buf)
			if err != nil {
				break
			}
			time.Sleep(15 * time.Millisecond)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"name":"ckpt/state/big"}`)
	}))
	defer srv.Close()
	s := openRemote(t, "GCS", strings.TrimPrefix(srv.URL, "http://"), limit)
	data := bytes.Repeat([]byte("s"), 48<<20) // 192 reads of 256 KiB, about 3s at this pace
	start := time.Now()
	err := within(t, time.Minute, "write", func() error { return s.WriteFile(context.Background(), "state/big", data) })
	if err != nil {
		t.Fatalf("a slow upload failed: %v", err)
	}
	if el := time.Since(start); el < 2*limit {
		t.Fatalf("the upload took %s, not over the limit %s: the test shows nothing", el, limit)
	}
}

// stallUpload is a server that takes the start of an uploaded file and then stops reading it,
// holding the connection until the client hangs up. It answers what each store asks first: S3's
// HEAD and WebHDFS's GETFILESTATUS say the file is missing, WebHDFS's CREATE redirects to itself
// as a DataNode.
func stallUpload(t *testing.T, took *atomic.Int64) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	stop := make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case r.Method == http.MethodHead:
			w.Header().Set("x-amz-request-id", "stall")
			w.WriteHeader(http.StatusNotFound)
		case r.Method == http.MethodGet || r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"RemoteException":{"exception":"FileNotFoundException","javaClassName":"java.io.FileNotFoundException","message":"no"}}`)
		case q.Get("op") == "CREATE" && q.Get("datanode") == "":
			w.Header().Set("Location", srv.URL+r.URL.Path+"?op=CREATE&datanode=1")
			w.WriteHeader(http.StatusTemporaryRedirect)
		default:
			n, _ := io.CopyN(io.Discard, r.Body, 1<<20)
			took.Add(n)
			// An unread body keeps the server from seeing the client hang up.
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv
}

// A server that stops taking a file being written, mid-body, fails the streamed Create within
// the idle limit, with a timeout error naming the endpoint and saying what stopped, instead of
// hanging: the write deadline covers the whole upload.
func TestStoresUploadStalls(t *testing.T) {
	const idle = 400 * time.Millisecond
	for _, kind := range remoteKinds {
		t.Run(kind, func(t *testing.T) {
			var took atomic.Int64
			srv := stallUpload(t, &took)
			s := openRemote(t, kind, strings.TrimPrefix(srv.URL, "http://"), idle)
			// 256 MiB, generated as it is read: far more than the socket buffers hold.
			const size = 256 << 20
			src := Source{Size: size, Open: func(context.Context) (io.ReadCloser, error) {
				return io.NopCloser(io.LimitReader(zeroReader{}, size)), nil
			}}
			start := time.Now()
			err := within(t, 30*time.Second, "create", func() error { return s.Create(context.Background(), "state/0/0/1.snapshot", src) })
			el := time.Since(start)
			if took.Load() == 0 {
				t.Fatalf("the server took none of the file (%v): the test shows nothing", err)
			}
			ep, limit, _, ok := timeoutOf(err)
			if !ok || ep != srv.URL || limit != idle {
				t.Fatalf("create: %v, want a timeout error naming %s and the limit %s", err, srv.URL, idle)
			}
			if msg := err.Error(); !strings.Contains(msg, "endpoint "+srv.URL+" stopped taking the file being written: no progress within "+idle.String()) {
				t.Errorf("message = %s", msg)
			}
			if el > 10*time.Second {
				t.Errorf("gave up after %s, with an idle limit of %s", el, idle)
			}
		})
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// dropFirstUpload is a server whose first upload attempt takes part of the body and then drops
// the connection; the next one is taken whole and its body recorded in got. It answers what each
// store asks first, as stallUpload does.
func dropFirstUpload(t *testing.T, got *bytes.Buffer, uploads *atomic.Int64) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case r.Method == http.MethodHead:
			w.Header().Set("x-amz-request-id", "drop")
			w.WriteHeader(http.StatusNotFound)
		case r.Method == http.MethodGet || r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNotFound)
		case q.Get("op") == "CREATE" && q.Get("datanode") == "":
			w.Header().Set("Location", srv.URL+r.URL.Path+"?op=CREATE&datanode=1")
			w.WriteHeader(http.StatusTemporaryRedirect)
		case q.Get("op") == "RENAME":
			_, _ = io.WriteString(w, `{"boolean":true}`)
		default:
			if uploads.Add(1) == 1 {
				_, _ = io.CopyN(io.Discard, r.Body, 64<<10)
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			got.Reset()
			_, _ = io.Copy(got, r.Body)
			h := w.Header()
			h.Set("ETag", `"1"`)
			h.Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
			h.Set("x-amz-request-id", "drop")
			h.Set("x-ms-request-id", "drop")
			h.Set("x-ms-version", "2023-11-03")
			h.Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"name":"x"}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A connection dropped while a file is sent is retried by the stores that retry (S3, GCS, Azure)
// and the retry sends the whole file again, read anew from the source: nothing of it is kept in
// memory between the attempts, and what arrives is the source's bytes.
func TestStoresUploadRetryRereadsSource(t *testing.T) {
	for _, kind := range []string{"S3", "GCS", "Azure Blob Storage"} {
		t.Run(kind, func(t *testing.T) {
			var got bytes.Buffer
			var uploads, opens atomic.Int64
			srv := dropFirstUpload(t, &got, &uploads)
			s := openRemote(t, kind, strings.TrimPrefix(srv.URL, "http://"), 10*time.Second)
			data := bytes.Repeat([]byte("0123456789abcdef"), 256<<10) // 4 MiB
			src := Source{Size: int64(len(data)), Open: func(context.Context) (io.ReadCloser, error) {
				opens.Add(1)
				return io.NopCloser(bytes.NewReader(data)), nil
			}}
			if err := s.Create(context.Background(), "state/0/0/1.snapshot", src); err != nil {
				t.Fatalf("Create: %v (%d uploads)", err, uploads.Load())
			}
			if uploads.Load() != 2 || !bytes.Equal(got.Bytes(), data) {
				t.Fatalf("%d uploads, the last took %d bytes equal %v; want 2 and the source's %d", uploads.Load(), got.Len(), bytes.Equal(got.Bytes(), data), len(data))
			}
			if opens.Load() < 2 {
				t.Fatalf("the source was opened %d times for 2 uploads", opens.Load())
			}
		})
	}
}
