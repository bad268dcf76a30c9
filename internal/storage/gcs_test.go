package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

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
		endpoint, bucket := storetest.GCSBucket(t)
		return storage.NewGCSAt(endpoint, nil, bucket, "")
	})
}

// TestGCSSmallPages runs the conformance suite with listings of two names a page, so that
// every List, Walk and Stat follows several pages of the emulator.
func TestGCSSmallPages(t *testing.T) {
	storetest.GCSEnv(t)
	storetest.RunStoreTests(t, func(t *testing.T) storage.Store {
		st := storetest.GCS(t)
		storage.GCSTuneForTest(st, 2, time.Millisecond)
		return st
	})
}

// TestGCSOpenWithEmulatorHost goes through Open as the CLI does: STORAGE_EMULATOR_HOST (here
// without a scheme, as the Google libraries document it) sends every request to the emulator.
func TestGCSOpenWithEmulatorHost(t *testing.T) {
	endpoint, bucket := storetest.GCSBucket(t)
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(endpoint, "http://"))
	ctx := context.Background()
	uri := "gs://" + bucket + "/deep/prefix/"
	st, err := storage.Open(ctx, uri, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, ok := st.(*storage.GCS)
	if !ok || g.URI() != uri || g.Bucket() != bucket || g.Prefix() != "deep/prefix" || g.Endpoint() != endpoint {
		t.Fatalf("Open(%q) = %T %+v", uri, st, st)
	}
	if err := st.WriteFile(ctx, "offsets/0", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if b := storetest.GCSGet(t, endpoint, bucket, "deep/prefix/offsets/0"); string(b) != "v1" {
		t.Fatalf("object body %q", b)
	}
	if err := st.WriteFile(ctx, "offsets/0", []byte("v2")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second write = %v, want fs.ErrExist", err)
	}
}

// TestGCSPreconditionRefusesOverwrite: the upload itself carries DoesNotExist, so an object
// written behind the store's back (no listing or stat in between) is not replaced.
func TestGCSPreconditionRefusesOverwrite(t *testing.T) {
	endpoint, bucket := storetest.GCSBucket(t)
	ctx := context.Background()
	storetest.GCSPut(t, endpoint, bucket, "ck/commits/3", []byte("first"))
	st := storage.NewGCSAt(endpoint, nil, bucket, "ck")
	err := st.WriteFile(ctx, "commits/3", []byte("second"))
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "write gs://"+bucket+"/ck/commits/3") {
		t.Fatalf("WriteFile over an existing object = %v, want fs.ErrExist naming the location", err)
	}
	if b, err := st.ReadFile(ctx, "commits/3"); err != nil || string(b) != "first" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
}

func TestGCSMissingBucket(t *testing.T) {
	st := storage.NewGCSAt(storetest.GCSEnv(t), nil, storetest.RandomName("nobucket-"), "ck")
	ctx := context.Background()
	for name, do := range map[string]func() error{
		"List":      func() error { _, err := st.List(ctx, ""); return err },
		"Walk":      func() error { _, err := st.Walk(ctx, "offsets"); return err },
		"Stat":      func() error { _, err := st.Stat(ctx, "offsets/0"); return err },
		"Stat root": func() error { _, err := st.Stat(ctx, ""); return err },
		"WriteFile": func() error { return st.WriteFile(ctx, "offsets/0", []byte("1")) },
	} {
		err := do()
		if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "bucket does not exist") {
			t.Errorf("%s on a missing bucket = %v, want a bucket error that is not fs.ErrNotExist", name, err)
		}
	}
}

// TestGCSListingSkipsForeignObjects: names a path cannot name (directory markers, "//") and
// objects of sibling prefixes never show up.
func TestGCSListingSkipsForeignObjects(t *testing.T) {
	endpoint, bucket := storetest.GCSBucket(t)
	ctx := context.Background()
	for _, k := range []string{"ck/offsets/", "ck/offsets/0", "ck/a/", "ck//x", "ck2/offsets/9", "ckX"} {
		data := []byte("1")
		if strings.HasSuffix(k, "/") {
			data = []byte{}
		}
		storetest.GCSPut(t, endpoint, bucket, k, data)
	}
	st := storage.NewGCSAt(endpoint, nil, bucket, "/ck/")
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

// gcsNames are object names that need escaping in a URL path or query.
var gcsNames = []string{"a b", "100%", "x+y", "c#1", "q?r", "é/ü", "semi;colon", "amp&eq=1", "%2F", "at@b:c,d$~!'()*"}

// TestGCSNameEscapingEmulator writes, lists, stats, reads and deletes names with characters
// URLs reserve, on the emulator: a name escaped wrongly on upload would be listed under
// another name, and wrongly in a path would not be found.
func TestGCSNameEscapingEmulator(t *testing.T) {
	st := storetest.GCS(t)
	ctx := context.Background()
	for i, n := range gcsNames {
		if err := st.WriteFile(ctx, "d/"+n, []byte(fmt.Sprint(i))); err != nil {
			t.Fatalf("write %q: %v", n, err)
		}
	}
	es, err := st.Walk(ctx, "d")
	if err != nil || len(es) != len(gcsNames) {
		t.Fatalf("Walk = %+v, %v", es, err)
	}
	for i, n := range gcsNames {
		p := "d/" + n
		if e, err := st.Stat(ctx, p); err != nil || e.Size != int64(len(fmt.Sprint(i))) || e.IsDir {
			t.Errorf("Stat(%q) = %+v, %v", p, e, err)
		}
		if b, err := st.ReadFile(ctx, p); err != nil || string(b) != fmt.Sprint(i) {
			t.Errorf("ReadFile(%q) = %q, %v", p, b, err)
		}
		if err := st.WriteFile(ctx, p, []byte("again")); !errors.Is(err, fs.ErrExist) {
			t.Errorf("second WriteFile(%q) = %v, want fs.ErrExist", p, err)
		}
	}
	if b := storetest.GCSGet(t, storetest.GCSEnv(t), st.Bucket(), st.Prefix()+"/d/é/ü"); string(b) != "5" {
		t.Errorf("object d/é/ü holds %q", b)
	}
	if es, err := st.List(ctx, "d/é"); err != nil || len(es) != 1 || es[0].Path != "d/é/ü" {
		t.Errorf("List(d/é) = %+v, %v", es, err)
	}
	for _, n := range gcsNames {
		if err := st.Delete(ctx, "d/"+n); err != nil {
			t.Errorf("Delete(%q): %v", n, err)
		}
	}
	if es, err := st.Walk(ctx, ""); err != nil || len(es) != 0 {
		t.Errorf("Walk after the deletes = %+v, %v", es, err)
	}
}

// fakeGCS is an httptest server whose handler the test sets, recording every request.
type fakeGCS struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []string // method and request URI as sent
}

func newFakeGCS(t *testing.T, h func(w http.ResponseWriter, r *http.Request, n int)) (*fakeGCS, *storage.GCS) {
	t.Helper()
	f := &fakeGCS{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.reqs = append(f.reqs, r.Method+" "+r.RequestURI)
		n := len(f.reqs)
		f.mu.Unlock()
		h(w, r, n)
	}))
	t.Cleanup(f.Close)
	st := storage.NewGCSAt(f.URL, nil, "bkt", "ck")
	storage.GCSTuneForTest(st, 0, time.Millisecond)
	return f, st
}

func (f *fakeGCS) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.reqs...)
}

func gcsJSONError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"error":{"code":%d,"message":%q}}`, code, msg)
}

// TestGCSRetryThenSuccess: a 503 (and a 429, and a dropped connection) is retried, and the
// second attempt's answer is the call's.
func TestGCSRetryThenSuccess(t *testing.T) {
	for _, fail := range []string{"503", "429", "reset"} {
		t.Run(fail, func(t *testing.T) {
			f, st := newFakeGCS(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n%2 == 1 {
					switch fail {
					case "503":
						gcsJSONError(w, http.StatusServiceUnavailable, "backend busy")
					case "429":
						gcsJSONError(w, http.StatusTooManyRequests, "slow down")
					case "reset":
						c, _, _ := w.(http.Hijacker).Hijack()
						c.Close()
					}
					return
				}
				switch {
				case r.Method == http.MethodGet && r.URL.Query().Get("alt") == "media":
					io.WriteString(w, "body")
				case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/o"):
					io.WriteString(w, `{"items":[{"name":"ck/f","size":"4","updated":"2026-01-02T03:04:05.5Z"}]}`)
				case r.Method == http.MethodPost:
					io.WriteString(w, `{"name":"ck/g"}`)
				default:
					http.Error(w, "unexpected", http.StatusBadRequest)
				}
			})
			ctx := context.Background()
			if b, err := st.ReadFile(ctx, "f"); err != nil || string(b) != "body" {
				t.Errorf("ReadFile = %q, %v", b, err)
			}
			es, err := st.List(ctx, "")
			if err != nil || len(es) != 1 || es[0].Path != "f" || es[0].Size != 4 || !es[0].ModTime.Equal(time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.UTC)) {
				t.Errorf("List = %+v, %v", es, err)
			}
			if err := st.WriteFile(ctx, "g", []byte("x")); err != nil {
				t.Errorf("WriteFile = %v", err)
			}
			if got := len(f.requests()); got != 6 {
				t.Errorf("%d requests, want 2 per call:\n%s", got, strings.Join(f.requests(), "\n"))
			}
		})
	}
}

// TestGCSRetryGivesUp: three 503 answers are the end (3 attempts in all), with an error naming
// the endpoint; the answer is no "not found" or "exists".
func TestGCSRetryGivesUp(t *testing.T) {
	f, st := newFakeGCS(t, func(w http.ResponseWriter, r *http.Request, n int) {
		gcsJSONError(w, http.StatusServiceUnavailable, "backend busy")
	})
	ctx := context.Background()
	for name, do := range map[string]func() error{
		"read":   func() error { _, err := st.ReadFile(ctx, "f"); return err },
		"open":   func() error { _, err := st.Open(ctx, "f"); return err },
		"list":   func() error { _, err := st.List(ctx, ""); return err },
		"stat":   func() error { _, err := st.Stat(ctx, "f"); return err },
		"write":  func() error { return st.WriteFile(ctx, "f", []byte("x")) },
		"delete": func() error { return st.Delete(ctx, "f") },
	} {
		before := len(f.requests())
		err := do()
		var ge *storage.GCSError
		if !errors.As(err, &ge) || ge.Status != http.StatusServiceUnavailable || ge.Attempts != 3 {
			t.Errorf("%s = %v, want a GCSError 503 after 3 attempts", name, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "GCS endpoint "+f.URL+" answered HTTP 503: backend busy (3 attempts)") || !strings.Contains(msg, "gs://bkt/ck") {
			t.Errorf("%s: message %q does not name the endpoint, status and location", name, msg)
		}
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist) {
			t.Errorf("%s: %v reads as a file error", name, err)
		}
		if got := len(f.requests()) - before; got != 3 {
			t.Errorf("%s: %d requests, want 3", name, got)
		}
	}
}

// TestGCSNoRetryForFinalAnswers: a 400, 403 or 404 is answered at once, mapped as documented.
func TestGCSNoRetryForFinalAnswers(t *testing.T) {
	status := 0
	f, st := newFakeGCS(t, func(w http.ResponseWriter, r *http.Request, n int) {
		gcsJSONError(w, status, "nope")
	})
	ctx := context.Background()
	for _, tc := range []struct {
		status int
		do     func() error
		check  func(error) bool
	}{
		{http.StatusBadRequest, func() error { _, err := st.ReadFile(ctx, "f"); return err },
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "HTTP 400: nope") }},
		{http.StatusForbidden, func() error { _, err := st.List(ctx, ""); return err },
			func(err error) bool {
				return errors.Is(err, fs.ErrPermission) && strings.Contains(err.Error(), "GOOGLE_APPLICATION_CREDENTIALS")
			}},
		{http.StatusUnauthorized, func() error { return st.WriteFile(ctx, "f", nil) },
			func(err error) bool { return errors.Is(err, fs.ErrPermission) }},
		{http.StatusNotFound, func() error { _, err := st.ReadFile(ctx, "f"); return err },
			func(err error) bool { return errors.Is(err, fs.ErrNotExist) }},
		{http.StatusNotFound, func() error { return st.Delete(ctx, "f") },
			func(err error) bool { return err == nil }},
		{http.StatusNotFound, func() error { _, err := st.Walk(ctx, ""); return err },
			func(err error) bool {
				return !errors.Is(err, fs.ErrNotExist) && err != nil && strings.Contains(err.Error(), "the bucket does not exist")
			}},
	} {
		status = tc.status
		before := len(f.requests())
		if err := tc.do(); !tc.check(err) {
			t.Errorf("HTTP %d: error %v", tc.status, err)
		}
		if got := len(f.requests()) - before; got != 1 {
			t.Errorf("HTTP %d: %d requests, want 1", tc.status, got)
		}
	}
}

// TestGCSWrite412 checks the upload request (one media upload with ifGenerationMatch=0) and
// its answers: 412 is fs.ErrExist, also when a first attempt landed but its answer was lost
// (here a 503) and the retry finds the object.
func TestGCSWrite412(t *testing.T) {
	var mu sync.Mutex
	stored := map[string]string{}
	f, st := newFakeGCS(t, func(w http.ResponseWriter, r *http.Request, n int) {
		q := r.URL.Query()
		if r.Method != http.MethodPost || r.URL.Path != "/upload/storage/v1/b/bkt/o" || q.Get("uploadType") != "media" || q.Get("ifGenerationMatch") != "0" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		name := q.Get("name")
		if _, ok := stored[name]; ok {
			gcsJSONError(w, http.StatusPreconditionFailed, "At least one of the pre-conditions you specified did not hold.")
			return
		}
		stored[name] = string(b)
		if name == "ck/lost" {
			gcsJSONError(w, http.StatusServiceUnavailable, "answer lost")
			return
		}
		io.WriteString(w, `{"name":"`+name+`"}`)
	})
	ctx := context.Background()
	if err := st.WriteFile(ctx, "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteFile(ctx, "a", []byte("2")); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "gs://bkt/ck") {
		t.Errorf("second write = %v, want fs.ErrExist naming the location", err)
	}
	if err := st.WriteFile(ctx, "lost", []byte("3")); !errors.Is(err, fs.ErrExist) {
		t.Errorf("write whose answer was lost = %v, want fs.ErrExist from the retry", err)
	}
	if stored["ck/a"] != "1" || stored["ck/lost"] != "3" {
		t.Errorf("stored %v", stored)
	}
	if got := len(f.requests()); got != 4 {
		t.Errorf("%d requests, want 4:\n%s", got, strings.Join(f.requests(), "\n"))
	}
}

// TestGCSPagination: List and Walk follow nextPageToken to the last page, collecting items
// and prefixes from every page (a prefix repeated on a later page is listed once).
func TestGCSPagination(t *testing.T) {
	pages := map[string]string{
		"":   `{"items":[{"name":"ck/a","size":"1"}],"prefixes":["ck/d1/"],"nextPageToken":"t1"}`,
		"t1": `{"prefixes":["ck/d1/","ck/d2/"],"nextPageToken":"t2"}`,
		"t2": `{"items":[{"name":"ck/b","size":"2"},{"name":"ck/c","size":"3"}]}`,
	}
	f, st := newFakeGCS(t, func(w http.ResponseWriter, r *http.Request, n int) {
		q := r.URL.Query()
		if r.URL.Path != "/storage/v1/b/bkt/o" || q.Get("prefix") != "ck/" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		io.WriteString(w, pages[q.Get("pageToken")])
	})
	ctx := context.Background()
	es, err := st.List(ctx, "")
	var got []string
	for _, e := range es {
		got = append(got, fmt.Sprintf("%s:%d:%v", e.Path, e.Size, e.IsDir))
	}
	if err != nil || strings.Join(got, " ") != "a:1:false b:2:false c:3:false d1:0:true d2:0:true" {
		t.Errorf("List = %v, %v", got, err)
	}
	reqs := f.requests()
	if len(reqs) != 3 || !strings.Contains(reqs[0], "delimiter=%2F") || !strings.Contains(reqs[2], "pageToken=t2") {
		t.Errorf("requests:\n%s", strings.Join(reqs, "\n"))
	}
	if es, err := st.Walk(ctx, ""); err != nil || len(es) != 3 {
		t.Errorf("Walk = %+v, %v", es, err)
	}
	if reqs := f.requests(); len(reqs) != 6 || strings.Contains(reqs[3], "delimiter") {
		t.Errorf("requests (List, then Walk):\n%s", strings.Join(reqs, "\n"))
	}
}

// TestGCSRequestEscaping checks the exact request URIs: the object name is one path segment
// with every byte but the unreserved ones escaped (its "/" as %2F, "+" as %2B), and the
// upload's name a query value.
func TestGCSRequestEscaping(t *testing.T) {
	f, st := newFakeGCS(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.Method {
		case http.MethodGet:
			if r.URL.Query().Get("alt") == "media" {
				io.WriteString(w, "x")
				return
			}
			io.WriteString(w, `{"name":"n","size":"1"}`)
		case http.MethodPost:
			io.WriteString(w, `{}`)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	ctx := context.Background()
	const p = "d/a b%+#?é=&;:@,$~"
	if _, err := st.ReadFile(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteFile(ctx, p, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	const seg = "ck%2Fd%2Fa%20b%25%2B%23%3F%C3%A9%3D%26%3B%3A%40%2C%24~"
	want := []string{
		"GET /storage/v1/b/bkt/o/" + seg + "?alt=media",
		"GET /storage/v1/b/bkt/o/" + seg + "?fields=name%2Csize%2Cupdated",
		"POST /upload/storage/v1/b/bkt/o?fields=name&ifGenerationMatch=0&name=ck%2Fd%2Fa+b%25%2B%23%3F%C3%A9%3D%26%3B%3A%40%2C%24~&uploadType=media",
		"DELETE /storage/v1/b/bkt/o/" + seg,
	}
	if got := f.requests(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestGCSRetryHonoursContext: a context ending during the backoff ends the call with the
// context's error, without further attempts.
func TestGCSRetryHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f, st := newFakeGCS(t, func(w http.ResponseWriter, r *http.Request, n int) {
		cancel()
		gcsJSONError(w, http.StatusServiceUnavailable, "busy")
	})
	storage.GCSTuneForTest(st, 0, time.Hour)
	done := make(chan error, 1)
	go func() { _, err := st.ReadFile(ctx, "f"); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ReadFile = %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute): // the wait is the failure under test
		t.Fatal("ReadFile still waiting for its retry after the context ended")
	}
	if got := len(f.requests()); got != 1 {
		t.Errorf("%d requests, want 1", got)
	}
}

// TestGCSReadRetriesCutBody: ReadFile tries again when the connection drops mid-body, and
// returns the whole object, never the cut one.
func TestGCSReadRetriesCutBody(t *testing.T) {
	f, st := newFakeGCS(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Length", "10")
		if n == 1 {
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "012")
			w.(http.Flusher).Flush()
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
			return
		}
		io.WriteString(w, "0123456789")
	})
	if b, err := st.ReadFile(context.Background(), "f"); err != nil || string(b) != "0123456789" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	if got := len(f.requests()); got != 2 {
		t.Errorf("%d requests, want 2", got)
	}
}
