package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// GCS is a Store on a Google Cloud Storage bucket below an object-name prefix, through the
// GCS JSON API over net/http (the Google client library would link gRPC, xDS and
// OpenTelemetry, which cost ckpt's every start-up a third of its memory). Directories are name
// prefixes ending in "/": List lists with delimiter "/", Walk without one; both follow every
// page. Objects that do not map to a clean relative path (directory markers ending in "/",
// names with "//") are left out of listings.
//
// WriteFile is a single-request media upload with the DoesNotExist precondition
// (ifGenerationMatch=0), which GCS executes atomically: of several racing writers exactly one
// wins and the others get 412, returned as fs.ErrExist. There are no resumable sessions, so a
// reader sees the whole object or nothing.
//
// Credentials come from Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, the
// gcloud application-default login, the metadata server on Google Cloud). When
// STORAGE_EMULATOR_HOST is set (host:port or a URL), requests go there without credentials,
// as every Google client library does, which is how the tests reach fake-gcs-server.
//
// Transient failures (HTTP 408, 429 and 5xx, reset or refused connections, timeouts) are
// retried, 3 attempts in all with a short backoff. Every call may be retried: reads, listings
// and deletes (a missing object is no error) are idempotent, and as on S3 a write that landed
// but whose answer was lost comes back from the retry as fs.ErrExist.
type GCS struct {
	client   *http.Client
	endpoint string // scheme://host[:port], no trailing "/"
	bucket   string
	prefix   string // no leading or trailing "/"
	uri      string
	timeout  time.Duration
	pageSize int           // maxResults of listings; 0 = the server's default (1000)
	backoff  time.Duration // wait before the second attempt, doubled for the third
}

const (
	// gcsAttempts is how often one call is tried: a transient failure that outlasts a few
	// seconds is an outage the user should hear about, not wait out.
	gcsAttempts = 3
	// gcsBackoff is the wait before the first retry (then doubled): long enough for a
	// restarted front end or a throttled bucket to recover, short next to a command.
	gcsBackoff = 250 * time.Millisecond
	// GCSEndpoint is the endpoint of Google Cloud Storage's JSON API.
	GCSEndpoint = "https://storage.googleapis.com"
	// gcsScope is the OAuth scope ckpt asks for: reads and create-only writes need no more.
	gcsScope = "https://www.googleapis.com/auth/devstorage.read_write"
)

// NewGCS returns a GCS store for bucket and name prefix ("" = the whole bucket; slashes at
// either end are ignored), with Application Default Credentials, or none when
// STORAGE_EMULATOR_HOST names an emulator. Each call may wait opts.Timeout (see
// Options) for the endpoint. No request is made, but finding the credentials may read files
// and, on Google Cloud, ask the metadata server.
func NewGCS(ctx context.Context, bucket, prefix string, opts Options) (*GCS, error) {
	if bucket == "" {
		return nil, badLocation("storage: empty GCS bucket name")
	}
	timeout, err := storeTimeout(opts)
	if err != nil {
		return nil, err
	}
	tr := timeoutTransport(timeout)
	var client *http.Client
	endpoint := GCSEndpoint
	if host := opts.getenv("STORAGE_EMULATOR_HOST"); host != "" {
		endpoint = host
		if !strings.Contains(host, "://") {
			endpoint = "http://" + host
		}
		client = &http.Client{Transport: tr}
	} else {
		// The token source keeps this context for its refreshes: it must outlive a canceled
		// caller, and its token requests get the same per-attempt timeouts.
		tctx := context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, &http.Client{Transport: tr})
		ts, err := google.DefaultTokenSource(tctx, gcsScope)
		if err != nil {
			return nil, fmt.Errorf("storage: Google credentials for gs://%s: %w (set GOOGLE_APPLICATION_CREDENTIALS or run gcloud auth application-default login)", bucket, err)
		}
		client = &http.Client{Transport: &oauth2.Transport{Source: ts, Base: tr}}
	}
	st := NewGCSAt(endpoint, client, bucket, prefix)
	st.timeout = timeout
	return st, nil
}

// NewGCSAt returns a GCS store that sends its requests to endpoint (scheme://host[:port] of
// the JSON API, e.g. GCSEndpoint or an emulator) through client, for callers (and tests) that
// set up the endpoint and credentials themselves. A nil client has no credentials and
// DefaultTimeout as its deadlines. Its URI is gs://bucket/prefix.
func NewGCSAt(endpoint string, client *http.Client, bucket, prefix string) *GCS {
	if client == nil {
		client = &http.Client{Transport: timeoutTransport(DefaultTimeout)}
	}
	prefix = strings.Trim(prefix, "/")
	uri := "gs://" + bucket
	if prefix != "" {
		uri += "/" + prefix
	}
	return &GCS{
		client:   client,
		endpoint: strings.TrimRight(endpoint, "/"),
		bucket:   bucket,
		prefix:   prefix,
		uri:      uri,
		timeout:  DefaultTimeout,
		backoff:  gcsBackoff,
	}
}

// URI returns the root as given to Open, or gs://bucket/prefix.
func (s *GCS) URI() string { return s.uri }

// Bucket returns the bucket name.
func (s *GCS) Bucket() string { return s.bucket }

// Prefix returns the name prefix of the root, without slashes at either end.
func (s *GCS) Prefix() string { return s.prefix }

// Endpoint returns the JSON API endpoint the requests go to, scheme://host[:port].
func (s *GCS) Endpoint() string { return s.endpoint }

func (s *GCS) key(op Op, p string, allowRoot bool) (string, string, error) {
	c, err := cleanPath(p, allowRoot)
	if err != nil {
		return "", "", pathErr(op, s.uri, p, err)
	}
	return c, Join(s.prefix, c), nil
}

// gcsEscape escapes an object or bucket name as one path segment, as the Google client
// libraries do (RFC 6570 simple expansion): every byte but the unreserved A-Z a-z 0-9 - . _ ~
// is percent-encoded, so "/" is %2F and "+" (a space to some front ends) is %2B.
func gcsEscape(name string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// objectURL is the JSON API URL of object name, with query q (may be nil).
func (s *GCS) objectURL(name string, q url.Values) string {
	u := s.endpoint + "/storage/v1/b/" + gcsEscape(s.bucket) + "/o/" + gcsEscape(name)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// GCSError is an error answer of the GCS JSON API, after the last attempt.
type GCSError struct {
	// Endpoint is the server that answered, scheme://host[:port].
	Endpoint string
	// Status is the HTTP status code.
	Status int
	// Message is the error message of the JSON answer, or the start of the body.
	Message string
	// Attempts is how often the call was tried (more than 1 for a transient failure).
	Attempts int
}

func (e *GCSError) Error() string {
	msg := fmt.Sprintf("the GCS endpoint %s answered HTTP %d", e.Endpoint, e.Status)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Attempts > 1 {
		msg += fmt.Sprintf(" (%d attempts)", e.Attempts)
	}
	return msg
}

// readGCSError makes a *GCSError of an error answer, consuming its body.
func (s *GCS) readGCSError(resp *http.Response) *GCSError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var je struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := ""
	if json.Unmarshal(body, &je) == nil {
		msg = je.Error.Message
	}
	if msg == "" {
		msg = strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return &GCSError{Endpoint: s.endpoint, Status: resp.StatusCode, Message: msg}
}

// gcsTransient reports whether a failed attempt may succeed when tried again.
func gcsTransient(err error) bool {
	var de *deadlineError // the deadline covers every attempt: it is spent
	if errors.As(err, &de) {
		return false
	}
	var ge *GCSError
	if errors.As(err, &ge) {
		return ge.Status == http.StatusRequestTimeout || ge.Status == http.StatusTooManyRequests || ge.Status >= 500
	}
	var re *oauth2.RetrieveError // the token endpoint's answer
	if errors.As(err, &re) {
		return re.Response != nil && (re.Response.StatusCode == http.StatusTooManyRequests || re.Response.StatusCode >= 500)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		// A server that drops the connection while the body is still being sent: the
		// transport's reader sees the close first and the writer then fails on its own
		// closed socket.
		errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// gcsRequest is one call of the JSON API; do builds a fresh request from it per attempt.
type gcsRequest struct {
	method string
	url    string
	body   *Source // sent as application/octet-stream when not nil, opened again per attempt
}

// do sends req until it succeeds, fails for good or has been tried gcsAttempts times. On a 2xx
// answer it calls read with the response, whose body do closes afterwards unless read keeps it
// (keep = true); an error of read that is transient (a connection lost mid-body) is retried
// too. The error of the last attempt is returned unmapped (see err); the caller's context
// ending stops the retries.
func (s *GCS) do(ctx context.Context, req gcsRequest, read func(*http.Response) (keep bool, err error)) error {
	ctx = withAnswerDeadline(ctx, s.timeout)
	var err error
	for attempt := 1; ; attempt++ {
		err = s.attempt(ctx, req, read)
		if err == nil || ctx.Err() != nil || !gcsTransient(err) {
			break
		}
		if attempt == gcsAttempts {
			var ge *GCSError
			if errors.As(err, &ge) {
				ge.Attempts = attempt
			} else {
				err = fmt.Errorf("%w (%d attempts)", err, attempt)
			}
			break
		}
		t := time.NewTimer(s.backoff << (attempt - 1))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	if cerr := ctx.Err(); cerr != nil && err != nil && !errors.Is(err, cerr) {
		return cerr
	}
	return err
}

func (s *GCS) attempt(ctx context.Context, req gcsRequest, read func(*http.Response) (bool, error)) error {
	hr, err := http.NewRequestWithContext(ctx, req.method, req.url, nil)
	if err != nil {
		return err
	}
	if req.body != nil {
		hr.Header.Set("Content-Type", "application/octet-stream")
		hr.ContentLength = req.body.Size
		hr.Body = http.NoBody
		if req.body.Size > 0 {
			// The transport closes it, also when the attempt fails.
			hr.Body = newRewinder(ctx, *req.body)
		}
	}
	hr.Header.Set("User-Agent", "ckpt")
	resp, err := s.client.Do(hr)
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return s.readGCSError(resp)
	}
	keep := false
	if read != nil {
		keep, err = read(resp)
	}
	if !keep {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10)) // lets the connection be reused
		resp.Body.Close()
	}
	return err
}

// The kinds of call for err: a 404 of a bucket call (listing, upload) can only mean that the
// bucket is missing.
const (
	objectCall = false
	bucketCall = true
)

// err turns a failed call into errors errors.Is understands, keeping the answer where it helps
// the user. A 404 of a bucket call (listings, uploads) means the bucket is missing; of an
// object call, that the object is (a missing bucket then shows on the next listing).
func (s *GCS) err(err error, bucket bool) error {
	if err == nil {
		return nil
	}
	if te := asTimeout("GCS", s.endpoint, s.timeout, err); te != nil {
		return te
	}
	if errors.Is(err, context.Canceled) {
		// The caller stopped (a signal): the SDK's layers around it say nothing more.
		return context.Canceled
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return fmt.Errorf("%w: getting a Google access token: %w (check the Google credentials: GOOGLE_APPLICATION_CREDENTIALS or gcloud auth application-default login)", fs.ErrPermission, err)
	}
	var ge *GCSError
	if errors.As(err, &ge) {
		switch ge.Status {
		case http.StatusNotFound:
			if bucket {
				return fmt.Errorf("the bucket does not exist: %w", err)
			}
			return fs.ErrNotExist
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%w: %w (check the Google credentials: GOOGLE_APPLICATION_CREDENTIALS or gcloud auth application-default login, and the bucket's IAM)", fs.ErrPermission, err)
		}
	}
	return err
}

// gcsObject is an object resource of the JSON API, with the fields ckpt asks for.
type gcsObject struct {
	Name    string    `json:"name"`
	Size    int64     `json:"size,string"`
	Updated time.Time `json:"updated"`
}

// list lists the objects whose names start with prefix, with delimiter "/" when delim is
// true, calling fn per page (items and common prefixes) until fn returns false or the last
// page. maxResults > 0 caps the page size.
func (s *GCS) list(ctx context.Context, prefix string, delim bool, maxResults int, fn func(items []gcsObject, prefixes []string) bool) error {
	q := url.Values{"fields": {"items(name,size,updated),prefixes,nextPageToken"}}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	if delim {
		q.Set("delimiter", "/")
	}
	if maxResults > 0 {
		q.Set("maxResults", strconv.Itoa(maxResults))
	}
	base := s.endpoint + "/storage/v1/b/" + gcsEscape(s.bucket) + "/o?"
	for {
		var page struct {
			Items         []gcsObject `json:"items"`
			Prefixes      []string    `json:"prefixes"`
			NextPageToken string      `json:"nextPageToken"`
		}
		err := s.do(ctx, gcsRequest{method: http.MethodGet, url: base + q.Encode()}, func(resp *http.Response) (bool, error) {
			page.Items, page.Prefixes, page.NextPageToken = nil, nil, ""
			if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
				return false, fmt.Errorf("listing gs://%s/%s: %w", s.bucket, prefix, err)
			}
			return false, nil
		})
		if err != nil {
			return s.err(err, bucketCall)
		}
		if !fn(page.Items, page.Prefixes) || page.NextPageToken == "" {
			return nil
		}
		q.Set("pageToken", page.NextPageToken)
	}
}

// List implements Store.
func (s *GCS) List(ctx context.Context, dir string) ([]Entry, error) {
	c, k, err := s.key(OpList, dir, true)
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	seen := map[string]bool{} // some servers (fake-gcs-server) repeat the prefixes on every page
	err = s.list(ctx, dirPrefix(k), true, s.pageSize, func(items []gcsObject, prefixes []string) bool {
		for _, p := range prefixes {
			if r, ok := keyRel(s.prefix, strings.TrimSuffix(p, "/")); ok && !seen[r] {
				seen[r] = true
				out = append(out, Entry{Path: r, IsDir: true})
			}
		}
		for _, a := range items {
			if r, ok := keyRel(s.prefix, a.Name); ok {
				out = append(out, Entry{Path: r, Size: a.Size, ModTime: a.Updated})
			}
		}
		return true
	})
	if err != nil {
		return nil, pathErr(OpList, s.uri, c, err)
	}
	sortEntries(out)
	return out, nil
}

// Walk implements Store.
func (s *GCS) Walk(ctx context.Context, dir string) ([]Entry, error) {
	c, k, err := s.key(OpWalk, dir, true)
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	err = s.list(ctx, dirPrefix(k), false, s.pageSize, func(items []gcsObject, _ []string) bool {
		for _, a := range items {
			if strings.HasSuffix(a.Name, "/") {
				continue // directory marker
			}
			if r, ok := keyRel(s.prefix, a.Name); ok {
				out = append(out, Entry{Path: r, Size: a.Size, ModTime: a.Updated})
			}
		}
		return true
	})
	if err != nil {
		return nil, pathErr(OpWalk, s.uri, c, err)
	}
	sortEntries(out)
	return out, nil
}

// Stat implements Store: the object's metadata, then, for a missing object, a one-name
// listing to tell a directory (some object below it) from nothing.
func (s *GCS) Stat(ctx context.Context, path string) (Entry, error) {
	c, k, err := s.key(OpStat, path, true)
	if err != nil {
		return Entry{}, err
	}
	if c != "" {
		var a gcsObject
		err := s.do(ctx, gcsRequest{method: http.MethodGet, url: s.objectURL(k, url.Values{"fields": {"name,size,updated"}})}, func(resp *http.Response) (bool, error) {
			return false, json.NewDecoder(resp.Body).Decode(&a)
		})
		if err == nil {
			return Entry{Path: c, Size: a.Size, ModTime: a.Updated}, nil
		}
		if err = s.err(err, objectCall); !errors.Is(err, fs.ErrNotExist) {
			return Entry{}, pathErr(OpStat, s.uri, c, err)
		}
	}
	lp := dirPrefix(k)
	found := false
	// Without a delimiter any object below counts; an empty page with a next-page token can
	// happen, so pages are followed until one has a name.
	err = s.list(ctx, lp, false, 1, func(items []gcsObject, _ []string) bool {
		found = len(items) > 0
		return !found
	})
	switch {
	case err != nil:
		return Entry{}, pathErr(OpStat, s.uri, c, err)
	case found || lp == "":
		return Entry{Path: c, IsDir: true}, nil
	}
	return Entry{}, pathErr(OpStat, s.uri, c, fs.ErrNotExist)
}

// get starts the media download of path; the body streams from the open connection.
func (s *GCS) get(ctx context.Context, op Op, path string) (string, io.ReadCloser, error) {
	c, k, err := s.key(op, path, false)
	if err != nil {
		return "", nil, err
	}
	var body io.ReadCloser
	err = s.do(ctx, gcsRequest{method: http.MethodGet, url: s.objectURL(k, url.Values{"alt": {"media"}})}, func(resp *http.Response) (bool, error) {
		body = resp.Body
		return true, nil
	})
	if err != nil {
		return "", nil, pathErr(op, s.uri, c, s.err(err, objectCall))
	}
	return c, body, nil
}

// ReadFile implements Store. A connection lost while the body is read is retried like a
// failed request.
func (s *GCS) ReadFile(ctx context.Context, path string) ([]byte, error) {
	c, k, err := s.key(OpRead, path, false)
	if err != nil {
		return nil, err
	}
	var b []byte
	err = s.do(ctx, gcsRequest{method: http.MethodGet, url: s.objectURL(k, url.Values{"alt": {"media"}})}, func(resp *http.Response) (bool, error) {
		var buf bytes.Buffer
		if resp.ContentLength > 0 {
			buf.Grow(int(resp.ContentLength))
		}
		_, err := buf.ReadFrom(resp.Body)
		b = buf.Bytes()
		if b == nil {
			b = []byte{}
		}
		return false, err
	})
	if err != nil {
		return nil, pathErr(OpRead, s.uri, c, s.err(err, objectCall))
	}
	return b, nil
}

// Open implements Store; the reader streams the object.
func (s *GCS) Open(ctx context.Context, path string) (io.ReadCloser, error) {
	return openStream(ctx, s.uri, path, s.get, func(err error) error { return s.err(err, objectCall) })
}

// WriteFile implements Store (see the type's doc).
func (s *GCS) WriteFile(ctx context.Context, path string, data []byte) error {
	return s.Create(ctx, path, BytesSource(data))
}

// Create implements Store: WriteFile's upload with the body streamed from src, opened again
// for each attempt.
func (s *GCS) Create(ctx context.Context, path string, src Source) error {
	c, k, err := s.key(OpWrite, path, false)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return pathErr(OpWrite, s.uri, c, err)
	}
	q := url.Values{"uploadType": {"media"}, "name": {k}, "ifGenerationMatch": {"0"}, "fields": {"name"}}
	u := s.endpoint + "/upload/storage/v1/b/" + gcsEscape(s.bucket) + "/o?" + q.Encode()
	err = s.do(ctx, gcsRequest{method: http.MethodPost, url: u, body: &src}, nil)
	if err != nil {
		var ge *GCSError
		if errors.As(err, &ge) && ge.Status == http.StatusPreconditionFailed {
			return pathErr(OpWrite, s.uri, c, fs.ErrExist)
		}
		return pathErr(OpWrite, s.uri, c, s.err(err, bucketCall))
	}
	return nil
}

// Delete implements Store. A missing object is not an error.
func (s *GCS) Delete(ctx context.Context, path string) error {
	c, k, err := s.key(OpDelete, path, false)
	if err != nil {
		return err
	}
	if err := s.do(ctx, gcsRequest{method: http.MethodDelete, url: s.objectURL(k, nil)}, nil); err != nil {
		if err = s.err(err, objectCall); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return pathErr(OpDelete, s.uri, c, err)
	}
	return nil
}
