package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"

	gcs "cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"
)

// GCS is a Store on a Google Cloud Storage bucket below an object-name prefix, through
// cloud.google.com/go/storage over its JSON and XML APIs. Directories are name prefixes ending
// in "/": List lists with delimiter "/", Walk without one; both follow every page. Objects
// that do not map to a clean relative path (directory markers ending in "/", names with "//")
// are left out of listings.
//
// WriteFile is an upload with the DoesNotExist precondition (ifGenerationMatch=0), which GCS
// executes atomically: of several racing writers exactly one wins and the others get 412,
// returned as fs.ErrExist. Uploads are single requests (no resumable sessions), so a reader
// sees the whole object or nothing.
//
// Credentials come from Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, the
// gcloud application-default login, the metadata server on Google Cloud). When
// STORAGE_EMULATOR_HOST is set (host:port or a URL), requests go there without credentials,
// as every Google client library does, which is how the tests reach fake-gcs-server.
//
// The client retries transient failures (3 attempts in all); as on S3, a write that landed but
// whose answer was lost comes back from the retry as fs.ErrExist.
type GCS struct {
	client   *gcs.Client
	bucket   string
	prefix   string // no leading or trailing "/"
	uri      string
	endpoint string
	timeout  time.Duration
}

// gcsAttempts is how often the client tries one call: without a limit it retries a
// transient failure until the context ends, which for a command without a deadline is never.
const gcsAttempts = 3

// NewGCS returns a GCS store for bucket and name prefix ("" = the whole bucket; slashes at
// either end are ignored), with Application Default Credentials, or none when
// STORAGE_EMULATOR_HOST names an emulator. Each request attempt may wait opts.Timeout (see
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
	var rt http.RoundTripper = timeoutTransport(timeout)
	endpoint := "https://storage.googleapis.com"
	if host := os.Getenv("STORAGE_EMULATOR_HOST"); host != "" {
		endpoint = host
		if !strings.Contains(host, "://") {
			endpoint = "http://" + host
		}
	} else {
		// Our transport carries the timeouts; NewTransport puts the credentials on top.
		rt, err = htransport.NewTransport(ctx, rt, option.WithScopes(gcs.ScopeReadWrite))
		if err != nil {
			return nil, fmt.Errorf("storage: Google credentials for gs://%s: %w (set GOOGLE_APPLICATION_CREDENTIALS or run gcloud auth application-default login)", bucket, err)
		}
	}
	client, err := gcs.NewClient(ctx, option.WithHTTPClient(&http.Client{Transport: rt}))
	if err != nil {
		return nil, fmt.Errorf("storage: GCS client: %w", err)
	}
	client.SetRetry(gcs.WithMaxAttempts(gcsAttempts))
	st := NewGCSFromClient(client, bucket, prefix)
	st.endpoint, st.timeout = endpoint, timeout
	return st, nil
}

// NewGCSFromClient returns a GCS store using a ready client, for callers (and tests) that
// configure it themselves. Its URI is gs://bucket/prefix.
func NewGCSFromClient(client *gcs.Client, bucket, prefix string) *GCS {
	prefix = strings.Trim(prefix, "/")
	uri := "gs://" + bucket
	if prefix != "" {
		uri += "/" + prefix
	}
	return &GCS{client: client, bucket: bucket, prefix: prefix, uri: uri}
}

// URI returns the root as given to Open, or gs://bucket/prefix.
func (s *GCS) URI() string { return s.uri }

// Client returns the underlying client.
func (s *GCS) Client() *gcs.Client { return s.client }

// Bucket returns the bucket name.
func (s *GCS) Bucket() string { return s.bucket }

// Prefix returns the name prefix of the root, without slashes at either end.
func (s *GCS) Prefix() string { return s.prefix }

func (s *GCS) key(op Op, p string, allowRoot bool) (string, string, error) {
	c, err := cleanPath(p, allowRoot)
	if err != nil {
		return "", "", pathErr(op, s.uri, p, err)
	}
	return c, Join(s.prefix, c), nil
}

// err turns client errors into ones errors.Is understands, keeping the client's error where
// it helps the user.
func (s *GCS) err(err error) error {
	if err == nil {
		return nil
	}
	if te := asTimeout("GCS", s.endpoint, s.timeout, err); te != nil {
		return te
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, gcs.ErrBucketNotExist) {
		return fmt.Errorf("the bucket does not exist: %w", err)
	}
	if errors.Is(err, gcs.ErrObjectNotExist) {
		return fs.ErrNotExist
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		switch ge.Code {
		case http.StatusNotFound:
			if strings.Contains(strings.ToLower(ge.Message), "bucket") {
				return fmt.Errorf("the bucket does not exist: %w", err)
			}
			return fs.ErrNotExist
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%w: %w (check the Google credentials: GOOGLE_APPLICATION_CREDENTIALS or gcloud auth application-default login, and the bucket's IAM)", fs.ErrPermission, err)
		}
	}
	return err
}

func isPrecondition(err error) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == http.StatusPreconditionFailed
}

// each lists below prefix k, with delimiter "/" when dirs is true, calling fn per object or
// common prefix.
func (s *GCS) each(ctx context.Context, k string, delim bool, fn func(a *gcs.ObjectAttrs)) error {
	q := &gcs.Query{Prefix: dirPrefix(k)}
	if delim {
		q.Delimiter = "/"
	}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Updated"}); err != nil {
		return err
	}
	it := s.client.Bucket(s.bucket).Objects(ctx, q)
	for {
		a, err := it.Next()
		if err == iterator.Done {
			return nil
		}
		if err != nil {
			return s.err(err)
		}
		fn(a)
	}
}

// List implements Store.
func (s *GCS) List(ctx context.Context, dir string) ([]Entry, error) {
	c, k, err := s.key(OpList, dir, true)
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	err = s.each(ctx, k, true, func(a *gcs.ObjectAttrs) {
		if a.Prefix != "" {
			if r, ok := keyRel(s.prefix, strings.TrimSuffix(a.Prefix, "/")); ok {
				out = append(out, Entry{Path: r, IsDir: true})
			}
			return
		}
		if r, ok := keyRel(s.prefix, a.Name); ok {
			out = append(out, Entry{Path: r, Size: a.Size, ModTime: a.Updated})
		}
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
	err = s.each(ctx, k, false, func(a *gcs.ObjectAttrs) {
		if strings.HasSuffix(a.Name, "/") {
			return // directory marker
		}
		if r, ok := keyRel(s.prefix, a.Name); ok {
			out = append(out, Entry{Path: r, Size: a.Size, ModTime: a.Updated})
		}
	})
	if err != nil {
		return nil, pathErr(OpWalk, s.uri, c, err)
	}
	sortEntries(out)
	return out, nil
}

// Stat implements Store: the object's attributes, then, for a missing object, a one-name
// listing to tell a directory (some object below it) from nothing.
func (s *GCS) Stat(ctx context.Context, path string) (Entry, error) {
	c, k, err := s.key(OpStat, path, true)
	if err != nil {
		return Entry{}, err
	}
	if c != "" {
		a, err := s.client.Bucket(s.bucket).Object(k).Attrs(ctx)
		if err == nil {
			return Entry{Path: c, Size: a.Size, ModTime: a.Updated}, nil
		}
		if err = s.err(err); !errors.Is(err, fs.ErrNotExist) {
			return Entry{}, pathErr(OpStat, s.uri, c, err)
		}
	}
	lp := dirPrefix(k)
	q := &gcs.Query{Prefix: lp}
	if err := q.SetAttrSelection([]string{"Name"}); err != nil {
		return Entry{}, pathErr(OpStat, s.uri, c, err)
	}
	it := s.client.Bucket(s.bucket).Objects(ctx, q)
	it.PageInfo().MaxSize = 1
	_, err = it.Next()
	switch {
	case err == nil || (lp == "" && err == iterator.Done):
		return Entry{Path: c, IsDir: true}, nil
	case err == iterator.Done:
		return Entry{}, pathErr(OpStat, s.uri, c, fs.ErrNotExist)
	}
	return Entry{}, pathErr(OpStat, s.uri, c, s.err(err))
}

func (s *GCS) get(ctx context.Context, op Op, path string) (string, *gcs.Reader, error) {
	c, k, err := s.key(op, path, false)
	if err != nil {
		return "", nil, err
	}
	r, err := s.client.Bucket(s.bucket).Object(k).NewReader(ctx)
	if err != nil {
		return "", nil, pathErr(op, s.uri, c, s.err(err))
	}
	return c, r, nil
}

// ReadFile implements Store.
func (s *GCS) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return readWhole(ctx, s.uri, path, s.get, s.err)
}

// Open implements Store; the reader streams the object.
func (s *GCS) Open(ctx context.Context, path string) (io.ReadCloser, error) {
	_, r, err := s.get(ctx, OpOpen, path)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// WriteFile implements Store (see the type's doc).
func (s *GCS) WriteFile(ctx context.Context, path string, data []byte) error {
	c, k, err := s.key(OpWrite, path, false)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return pathErr(OpWrite, s.uri, c, err)
	}
	// The writer's context must end with the write: an abandoned writer keeps its upload
	// goroutine alive until its context is done.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := s.client.Bucket(s.bucket).Object(k).If(gcs.Conditions{DoesNotExist: true}).NewWriter(wctx)
	w.ChunkSize = 0 // one request: no resumable session, nothing visible before the end
	if _, err := w.Write(data); err != nil {
		_ = w.Close()
		return pathErr(OpWrite, s.uri, c, s.writeErr(err))
	}
	if err := w.Close(); err != nil {
		return pathErr(OpWrite, s.uri, c, s.writeErr(err))
	}
	return nil
}

func (s *GCS) writeErr(err error) error {
	if isPrecondition(err) {
		return fs.ErrExist
	}
	return s.err(err)
}

// Delete implements Store. A missing object is not an error.
func (s *GCS) Delete(ctx context.Context, path string) error {
	c, k, err := s.key(OpDelete, path, false)
	if err != nil {
		return err
	}
	if err := s.client.Bucket(s.bucket).Object(k).Delete(ctx); err != nil {
		if err = s.err(err); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return pathErr(OpDelete, s.uri, c, err)
	}
	return nil
}
