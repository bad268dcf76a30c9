package storage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// DefaultTimeout is Options.Timeout's default, for the same reasons as DefaultS3Timeout: a
// store starts answering within a second or so, so 30s leaves a wide margin for a slow
// emulator or a congested link while an endpoint that never answers fails in a minute or two
// (a few attempts) instead of hanging the command.
const DefaultTimeout = 30 * time.Second

// storeTimeout resolves Options.Timeout's default.
func storeTimeout(opts Options) (time.Duration, error) {
	if opts.Timeout > 0 {
		return opts.Timeout, nil
	}
	if v := os.Getenv("CKPT_STORE_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("storage: CKPT_STORE_TIMEOUT=%q: want a positive duration such as 45s", v)
		}
		return d, nil
	}
	return DefaultTimeout, nil
}

// timeoutTransport is an HTTP transport whose every attempt must connect, finish TLS and
// receive the response headers within timeout. The body is not limited, so a large file
// still streams.
func timeoutTransport(timeout time.Duration) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = timeout
	tr.ResponseHeaderTimeout = timeout
	tr.MaxIdleConnsPerHost = DefaultReadParallelism
	return tr
}

// TimeoutError is returned when a GCS, Azure or WebHDFS endpoint did not answer a request in
// time: it accepted no connection, or accepted one and sent no response. (S3 has its own,
// S3TimeoutError, which names the S3 flags.)
type TimeoutError struct {
	// Store names the kind of store ("GCS", "Azure Blob Storage", "WebHDFS").
	Store string
	// Endpoint is the server (scheme and host) that did not answer.
	Endpoint string
	// Timeout is the per-request limit.
	Timeout time.Duration
	Err     error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("the %s endpoint %s did not answer within %s: check that it is the right endpoint and that it is up, or wait longer with --store-timeout or CKPT_STORE_TIMEOUT (%v)",
		e.Store, e.Endpoint, e.Timeout, e.Err)
}

// Unwrap returns the cause.
func (e *TimeoutError) Unwrap() error { return e.Err }

// asTimeout returns a *TimeoutError when err is an HTTP request that timed out in the
// transport (not the caller's own deadline, which is not the endpoint's fault), else nil.
func asTimeout(store, endpoint string, timeout time.Duration, err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) || !ue.Timeout() || ue.Err == context.DeadlineExceeded || ue.Err == context.Canceled {
		return nil
	}
	if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
		endpoint = u.Scheme + "://" + u.Host
	}
	if endpoint == "" {
		endpoint = "(unknown)"
	}
	return &TimeoutError{Store: store, Endpoint: endpoint, Timeout: timeout, Err: err}
}

// bucketURI splits "//bucket/prefix" (what follows "scheme:") into its parts; the prefix
// loses its slashes at either end.
func bucketURI(rest string) (bucket, prefix string, ok bool) {
	rest, ok = strings.CutPrefix(rest, "//")
	if !ok {
		return "", "", false
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	return bucket, strings.Trim(prefix, "/"), bucket != ""
}

// keyRel maps an object key below prefix back to a clean relative path; ok is false for keys
// no path names (directory markers, "//", "." elements, keys outside the prefix).
func keyRel(prefix, key string) (string, bool) {
	r := key
	if prefix != "" {
		var ok bool
		if r, ok = strings.CutPrefix(key, prefix+"/"); !ok {
			return "", false
		}
	}
	if r == "" || r[0] == '/' || Join(r) != r {
		return "", false
	}
	return r, true
}

// dirPrefix is the listing prefix of a key directory: "" for the root, else k + "/".
func dirPrefix(k string) string {
	if k == "" {
		return ""
	}
	return k + "/"
}
