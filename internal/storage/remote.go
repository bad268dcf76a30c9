package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTimeout is Options.Timeout's default, for the same reasons as DefaultS3Timeout: a
// store starts answering within a second or so, so 30s leaves a wide margin for a slow
// emulator or a congested link while an endpoint that never answers fails in 30s, all attempts
// included, instead of hanging the command.
const DefaultTimeout = 30 * time.Second

// storeTimeout resolves Options.Timeout's default.
func storeTimeout(opts Options) (time.Duration, error) {
	if opts.Timeout > 0 {
		return opts.Timeout, nil
	}
	if v := opts.getenv("CKPT_STORE_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("storage: CKPT_STORE_TIMEOUT=%q: want a positive duration such as 45s", v)
		}
		return d, nil
	}
	return DefaultTimeout, nil
}

// timeoutTransport is an HTTP transport whose connections are dialed and TLS-handshaken within
// timeout, wrapped in the deadlines of guardTransport.
func timeoutTransport(timeout time.Duration) http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = timeout
	tr.MaxIdleConnsPerHost = DefaultReadParallelism
	return guardTransport(tr, timeout)
}

// guardTransport puts two deadlines on every request sent through base:
//
//   - the answer deadline: the response headers must arrive by the deadline withAnswerDeadline
//     put in the request's context, or within timeout of sending when there is none. One
//     deadline covers every attempt of a call (the clients' retries each see what is left of
//     it), so "did not answer within 30s" is what the user waited;
//   - the idle-read deadline: once the headers are in, every Read of the body must get data
//     within timeout. A server that sends headers and then stalls fails; a large file that keeps
//     streaming, however slowly, does not.
//
// Either failure is a *url.Error naming the URL whose cause is a *deadlineError, which the
// stores' error mapping turns into a TimeoutError naming the endpoint, and which tells the
// clients' retry policies not to try again: the deadline is spent.
func guardTransport(base http.RoundTripper, timeout time.Duration) http.RoundTripper {
	return &guard{do: base.RoundTrip, timeout: timeout}
}

// guard implements guardTransport, as an http.RoundTripper and (for the AWS SDK, which takes a
// client) as an HTTP client.
type guard struct {
	do      func(*http.Request) (*http.Response, error)
	timeout time.Duration
}

// answerByKey is the context key of the answer deadline (an *answerDeadline).
type answerByKey struct{}

// answerDeadline is when the answer of a call must have come, over all its attempts.
type answerDeadline struct {
	mu sync.Mutex
	by time.Time
}

// withAnswerDeadline gives the requests made with the returned context one deadline for their
// answer: timeout from now, over all attempts. A context that has one already keeps it.
func withAnswerDeadline(ctx context.Context, timeout time.Duration) context.Context {
	if timeout <= 0 {
		return ctx
	}
	if _, ok := ctx.Value(answerByKey{}).(*answerDeadline); ok {
		return ctx
	}
	return context.WithValue(ctx, answerByKey{}, &answerDeadline{by: time.Now().Add(timeout)})
}

// answerBy returns the answer deadline of ctx, if it has one.
func answerBy(ctx context.Context) (time.Time, bool) {
	d, ok := ctx.Value(answerByKey{}).(*answerDeadline)
	if !ok {
		return time.Time{}, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.by, true
}

// extendAnswer moves the answer deadline of ctx by d: time spent reading the call's own body
// (a client that reads it whole for a checksum before sending) is not waiting for the endpoint.
func extendAnswer(ctx context.Context, d time.Duration) {
	if a, ok := ctx.Value(answerByKey{}).(*answerDeadline); ok {
		a.mu.Lock()
		a.by = a.by.Add(d)
		a.mu.Unlock()
	}
}

// deadlineError is a request the guard gave up on.
type deadlineError struct {
	// stalled: the headers came, then the body stopped; else no answer came.
	stalled bool
	// sending: the endpoint stopped taking the request's body.
	sending bool
	limit   time.Duration
}

func (e *deadlineError) Error() string {
	if e.stalled {
		return fmt.Sprintf("the answer stopped: no data for %s", e.limit)
	}
	if e.sending {
		return fmt.Sprintf("the upload stopped: the endpoint took no data for %s", e.limit)
	}
	return fmt.Sprintf("no answer within %s", e.limit)
}

// Timeout makes it a net.Error that timed out.
func (e *deadlineError) Timeout() bool { return true }

// Temporary is false: trying again would wait past the deadline.
func (e *deadlineError) Temporary() bool { return false }

// RetryableError tells the AWS SDK's retryer not to try again.
func (e *deadlineError) RetryableError() bool { return false }

// NonRetriable tells azcore's retry policy not to try again.
func (e *deadlineError) NonRetriable() {}

// RoundTrip implements http.RoundTripper.
func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	by, ok := answerBy(req.Context())
	if !ok {
		by = time.Now().Add(g.timeout)
	}
	fail := func(stalled bool) error {
		return &url.Error{Op: req.Method, URL: req.URL.String(), Err: &deadlineError{stalled: stalled, limit: g.timeout}}
	}
	wait := time.Until(by)
	if wait <= 0 {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on error
		}
		return nil, fail(false)
	}
	ctx, cancel := context.WithCancel(req.Context())
	var fired, sending atomic.Bool
	var upload atomic.Pointer[uploadBody]
	t := time.AfterFunc(wait, func() {
		if u := upload.Load(); u != nil {
			sending.Store(u.sending())
		}
		fired.Store(true)
		cancel()
	})
	out := req.WithContext(ctx)
	var ub *uploadBody
	if req.Body != nil && req.Body != http.NoBody {
		// Sending a large file is not waiting for an answer: while the body goes out, the
		// limit is between reads of it, and the answer deadline moves by the time it took.
		ub = &uploadBody{rc: req.Body, timer: t, limit: g.timeout, by: by}
		upload.Store(ub)
		out.Body = ub
	}
	resp, err := g.do(out)
	if ub != nil {
		ub.finish() // before the timer is stopped: a write still going on must not re-arm it
	}
	if !t.Stop() || fired.Load() {
		if resp != nil {
			resp.Body.Close()
		}
		cancel()
		if sending.Load() {
			return nil, &url.Error{Op: req.Method, URL: req.URL.String(), Err: &deadlineError{sending: true, limit: g.timeout}}
		}
		return nil, fail(false)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	b := &idleBody{rc: resp.Body, cancel: cancel, limit: g.timeout, fail: func() error { return fail(true) }}
	b.timer = time.AfterFunc(g.timeout, func() { b.fired.Store(true); cancel() })
	b.timer.Stop()
	resp.Body = b
	return resp, nil
}

// uploadBody is a request body that keeps the guard's timer from firing while the transport
// reads it: each Read gives the next one the whole limit, and at the end the timer is set to the
// answer deadline moved by the time the body took. Once the round trip has returned (the
// transport may still be sending), it leaves the timer alone.
type uploadBody struct {
	rc      io.ReadCloser
	timer   *time.Timer
	limit   time.Duration
	by      time.Time
	mu      sync.Mutex
	started time.Time
	done    bool // the body was read to its end, or the round trip returned
}

func (b *uploadBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.started.IsZero() {
		b.started = time.Now()
	}
	if !b.done && b.timer.Stop() {
		b.timer.Reset(b.limit)
	}
	b.mu.Unlock()
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.mu.Lock()
		if !b.done {
			b.done = true
			if b.timer.Stop() {
				b.timer.Reset(time.Until(b.by.Add(time.Since(b.started))))
			}
		}
		b.mu.Unlock()
	}
	return n, err
}

func (b *uploadBody) Close() error { return b.rc.Close() }

// sending reports a body started and not yet read to its end.
func (b *uploadBody) sending() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.started.IsZero() && !b.done
}

// finish stops the body from touching the timer: the round trip is over.
func (b *uploadBody) finish() {
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
}

// Do implements the AWS SDK's HTTPClient over an inner client's Do.
func (g *guard) Do(req *http.Request) (*http.Response, error) { return g.RoundTrip(req) }

// idleBody is a response body whose every Read must return within limit; when one does not, the
// request is canceled and the Read fails with the guard's error.
type idleBody struct {
	rc     io.ReadCloser
	cancel context.CancelFunc
	limit  time.Duration
	timer  *time.Timer
	fired  atomic.Bool
	fail   func() error
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.timer.Reset(b.limit)
	n, err := b.rc.Read(p)
	b.timer.Stop()
	if err != nil && b.fired.Load() {
		return n, b.fail()
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	err := b.rc.Close()
	b.cancel()
	return err
}

// TimeoutError is returned when a GCS, Azure or WebHDFS endpoint did not answer a request in
// time (it accepted no connection, or accepted one and sent no response), or stopped sending the
// body of an answer. (S3 has its own, S3TimeoutError, which names the S3 flags.)
type TimeoutError struct {
	// Store names the kind of store ("GCS", "Azure Blob Storage", "WebHDFS").
	Store string
	// Endpoint is the server (scheme and host) that did not answer.
	Endpoint string
	// Timeout is the limit: for the answer, over all attempts of a call, and for each wait for
	// data of its body.
	Timeout time.Duration
	Err     error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("the %s endpoint %s %s: check that it is the right endpoint and that it is up, or wait longer with --store-timeout or CKPT_STORE_TIMEOUT (%v)",
		e.Store, e.Endpoint, timeoutWhat(e.Err, e.Timeout), e.Err)
}

// Stalled reports an answer whose body stopped, rather than no answer.
func (e *TimeoutError) Stalled() bool { return stalled(e.Err) }

// Unwrap returns the cause.
func (e *TimeoutError) Unwrap() error { return e.Err }

func stalled(err error) bool {
	var de *deadlineError
	return errors.As(err, &de) && de.stalled
}

// timeoutWhat says what an endpoint failed to do in time.
func timeoutWhat(err error, limit time.Duration) string {
	within := ""
	if limit > 0 {
		within = " within " + limit.String()
	}
	if stalled(err) {
		return "stopped sending an answer: no data" + within
	}
	var de *deadlineError
	if errors.As(err, &de) && de.sending {
		return "stopped taking the file being written: no progress" + within
	}
	return "did not answer" + within
}

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
