package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/ckpt-dev/ckpt/internal/progress"
)

// S3 is a Store on an S3 bucket below a key prefix, through aws-sdk-go-v2.
// Directories are key prefixes ending in "/": List uses ListObjectsV2 with
// delimiter "/", Walk lists without one; both follow every page. Keys that do
// not map to a clean relative path (directory-marker objects ending in "/",
// keys with "//") are left out of listings.
//
// WriteFile is PutObject with If-None-Match: "*", which S3 (since 2024) and
// compatible servers (versitygw, MinIO) execute atomically: exactly one of
// several racing writers wins and the others get 412 PreconditionFailed (or
// 409 ConditionalRequestConflict), returned as fs.ErrExist. A HeadObject
// existence check runs first, as Spark's HDFSMetadataLog does, so that a
// server that ignores If-None-Match still refuses the common case of writing
// over an existing file; such a server cannot protect against two writers
// racing, and neither can Spark on S3 (its rename is copy+delete).
//
// A missing key is fs.ErrNotExist only if the credentials may list the
// bucket: without s3:ListBucket, S3 answers 403 for missing keys, which
// surfaces as fs.ErrPermission (ckpt needs to list anyway).
//
// The SDK retries failed requests. If a PutObject landed but its response was
// lost, the retry sees 412 and WriteFile reports fs.ErrExist for what is the
// caller's own write; callers that must tell the two apart compare the
// stored bytes.
type S3 struct {
	client *s3.Client
	bucket string
	prefix string // no leading or trailing "/"
	uri    string
	// endpoint names the server in timeout errors when the failed request's URL is unknown;
	// timeout is the limit NewS3 configured (0: unknown, a caller's client).
	endpoint string
	timeout  time.Duration
}

// S3TimeoutError is returned when an S3 endpoint did not answer a request in time (it accepted
// no connection, or accepted one and sent no response), or stopped sending the body of an answer.
type S3TimeoutError struct {
	// Endpoint is the server (scheme and host) that did not answer.
	Endpoint string
	// Timeout is the limit (0 when not known): for the answer, over all attempts of a call, and
	// for each wait for data of its body.
	Timeout time.Duration
	Err     error
}

func (e *S3TimeoutError) Error() string {
	return fmt.Sprintf("the S3 endpoint %s %s: check that it is the right endpoint and that it is up (--s3-endpoint), or wait longer with --s3-timeout or CKPT_S3_TIMEOUT (%v)",
		e.Endpoint, timeoutWhat(e.Err, e.Timeout), e.Err)
}

// Stalled reports an answer whose body stopped, rather than no answer.
func (e *S3TimeoutError) Stalled() bool { return stalled(e.Err) }

// Unwrap returns the SDK's error.
func (e *S3TimeoutError) Unwrap() error { return e.Err }

// S3CredentialsError says that no AWS credentials were found: the SDK's chain (environment,
// profiles, SSO, web identity, the instance role) came up empty.
type S3CredentialsError struct{ Err error }

func (e *S3CredentialsError) Error() string {
	return fmt.Sprintf("no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (a profile in ~/.aws/config or ~/.aws/credentials), or run where an instance or pod role applies (the SDK's lookup ended with: %v)", e.Err)
}

// Unwrap returns the SDK's error.
func (e *S3CredentialsError) Unwrap() error { return e.Err }

// NotS3Error says that the endpoint answered 404 without the marks of S3 (a request id, an XML
// error): it is some other web server.
type NotS3Error struct {
	Endpoint string
	Err      error
}

func (e *NotS3Error) Error() string {
	return fmt.Sprintf("the endpoint %s answered 404 Not Found without an S3 error: it does not look like an S3 endpoint (check --s3-endpoint, AWS_ENDPOINT_URL and the port)", e.Endpoint)
}

// Unwrap returns the SDK's error.
func (e *NotS3Error) Unwrap() error { return e.Err }

// s3Timeout resolves Options.S3Timeout's default.
func s3Timeout(opts Options) (time.Duration, error) {
	if opts.S3Timeout > 0 {
		return opts.S3Timeout, nil
	}
	if v := opts.getenv("CKPT_S3_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("storage: CKPT_S3_TIMEOUT=%q: want a positive duration such as 45s", v)
		}
		return d, nil
	}
	if opts.Timeout > 0 || opts.getenv("CKPT_STORE_TIMEOUT") != "" {
		return storeTimeout(opts)
	}
	return DefaultS3Timeout, nil
}

// NewS3 returns an S3 store for bucket and key prefix ("" = the whole
// bucket; leading and trailing slashes are ignored), configured from the
// standard AWS chain (config.LoadDefaultConfig: environment, shared config
// and credentials files, AWS_PROFILE, SSO, web identity, IMDS) and opts.
// No request is made.
func NewS3(ctx context.Context, bucket, prefix string, opts Options) (*S3, error) {
	if bucket == "" {
		return nil, badLocation("storage: empty S3 bucket name")
	}
	if opts.S3Endpoint != "" && !strings.Contains(opts.S3Endpoint, "://") {
		return nil, badLocation("storage: S3 endpoint %q needs a scheme, e.g. http://%s or https://%s", opts.S3Endpoint, opts.S3Endpoint, opts.S3Endpoint)
	}
	timeout, err := s3Timeout(opts)
	if err != nil {
		return nil, err
	}
	// Each attempt must connect and get its response headers within timeout (also the clients
	// of the credential chain); the S3 client's calls get the guard on top (below).
	httpClient := awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = timeout }).
		WithTransportOptions(func(tr *http.Transport) {
			tr.ResponseHeaderTimeout = timeout
			tr.TLSHandshakeTimeout = timeout
		})
	// The SDK's logger: silent unless --debug, also for the clients the credential chain makes
	// (IMDS would print "WARN falling back to IMDSv1" on stderr).
	logger, logMode := s3Logging(opts.Trace, opts.Debug)
	lo := []func(*config.LoadOptions) error{config.WithHTTPClient(httpClient), config.WithLogger(logger), config.WithClientLogMode(logMode)}
	if opts.S3Region != "" {
		lo = append(lo, config.WithRegion(opts.S3Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return nil, fmt.Errorf("storage: loading AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	// One deadline covers the answer of a call over all its attempts, and each wait for data of
	// a body has it too (guardTransport); a large object still streams. It wraps the client the
	// configuration resolved (with AWS_CA_BUNDLE's roots), which must stay a BuildableClient
	// until then.
	cfg.HTTPClient = &guard{timeout: timeout, do: cfg.HTTPClient.Do}
	if opts.Trace != nil {
		cfg.APIOptions = append(cfg.APIOptions, addS3Trace(opts.Trace))
	}
	pathStyle := opts.S3PathStyle
	if v, err := strconv.ParseBool(opts.getenv("CKPT_S3_PATH_STYLE")); err == nil && v {
		pathStyle = true
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opts.S3Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.S3Endpoint)
		}
		if pathStyle {
			o.UsePathStyle = true
		}
		// Many S3-compatible servers send no response checksum; the SDK
		// would print a warning to stderr for every GetObject.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	st := NewS3FromClient(client, bucket, prefix)
	st.timeout = timeout
	switch {
	case opts.S3Endpoint != "":
		st.endpoint = opts.S3Endpoint
	case cfg.BaseEndpoint != nil:
		st.endpoint = *cfg.BaseEndpoint
	default:
		st.endpoint = "https://s3." + cfg.Region + ".amazonaws.com"
	}
	return st, nil
}

// NewS3FromClient returns an S3 store using a ready client, for callers (and
// tests) that configure the SDK themselves. Its URI is s3://bucket/prefix.
func NewS3FromClient(client *s3.Client, bucket, prefix string) *S3 {
	prefix = strings.Trim(prefix, "/")
	uri := "s3://" + bucket
	if prefix != "" {
		uri += "/" + prefix
	}
	return &S3{client: client, bucket: bucket, prefix: prefix, uri: uri}
}

// URI returns the root as given to Open, or s3://bucket/prefix.
func (s *S3) URI() string { return s.uri }

// Client returns the underlying SDK client.
func (s *S3) Client() *s3.Client { return s.client }

// Bucket returns the bucket name.
func (s *S3) Bucket() string { return s.bucket }

// Prefix returns the key prefix of the root, without slashes at either end
// ("" = the bucket root).
func (s *S3) Prefix() string { return s.prefix }

// key validates p and returns its clean form and object key.
func (s *S3) key(op Op, p string, allowRoot bool) (string, string, error) {
	c, err := cleanPath(p, allowRoot)
	if err != nil {
		return "", "", pathErr(op, s.uri, p, err)
	}
	return c, Join(s.prefix, c), nil
}

// rel maps an object key below the root back to a clean relative path; ok is
// false for keys no path names (markers, "//", "." elements).
func (s *S3) rel(key string) (string, bool) {
	r := key
	if s.prefix != "" {
		var ok bool
		if r, ok = strings.CutPrefix(key, s.prefix+"/"); !ok {
			return "", false
		}
	}
	if r == "" || Join(r) != r {
		return "", false
	}
	return r, true
}

// s3Err turns SDK errors into ones that errors.Is understands, keeping the
// SDK error (request id, code) where it helps the user.
func (s *S3) s3Err(err error) error {
	if err == nil {
		return nil
	}
	// The http.Client's *url.Error says whether the request timed out and which URL did not
	// answer. It comes before the context check (net/http's timeouts match
	// context.DeadlineExceeded too), but the caller's own deadline (the bare context error) is
	// not the endpoint's fault.
	var ue *url.Error
	if errors.As(err, &ue) && ue.Timeout() && ue.Err != context.DeadlineExceeded {
		endpoint := s.endpoint
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			endpoint = u.Scheme + "://" + u.Host
		}
		if endpoint == "" {
			endpoint = "(unknown)"
		}
		return &S3TimeoutError{Endpoint: endpoint, Timeout: s.timeout, Err: err}
	}
	if errors.Is(err, context.Canceled) {
		// The caller stopped (a signal): the SDK's layers around it say nothing more.
		return context.Canceled
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// Virtual-hosted style puts the bucket in the host name
	// (bucket.localhost), which S3-compatible servers rarely resolve.
	var dns *net.DNSError
	if errors.As(err, &dns) && !s.client.Options().UsePathStyle && strings.HasPrefix(dns.Name, s.bucket+".") {
		return fmt.Errorf("%w (S3-compatible servers usually need path-style addressing: set CKPT_S3_PATH_STYLE=true)", err)
	}
	// The credential chain found nothing (or its last link failed): a missing configuration, not
	// a refusal by the server, even when the last link (IMDS) answered 403.
	if strings.Contains(err.Error(), "get identity: ") {
		return &S3CredentialsError{Err: err}
	}
	code, status := "", 0
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if status == 404 && re != nil && re.Response != nil && re.Response.Request != nil && re.Response.Request.Method != http.MethodHead &&
		re.Response.Header.Get("x-amz-request-id") == "" && !strings.Contains(re.Response.Header.Get("Content-Type"), "xml") {
		// Every S3 answer carries a request id; a bare 404 comes from a web server that is not S3
		// (a wrong port, a console URL): reading it as "no such file" would make a typo look like
		// an empty checkpoint. (A HEAD answer has no body to tell by; commands list first.)
		endpoint := s.endpoint
		if u := re.Response.Request.URL; u != nil {
			endpoint = u.Scheme + "://" + u.Host
		}
		return &NotS3Error{Endpoint: endpoint, Err: err}
	}
	switch {
	case code == "NoSuchBucket":
		return fmt.Errorf("the bucket does not exist: %w", err)
	case errors.As(err, &nsk), errors.As(err, &nf), code == "NoSuchKey", code == "NotFound", status == 404:
		return fs.ErrNotExist
	case status == 403, code == "AccessDenied", code == "SignatureDoesNotMatch", code == "InvalidAccessKeyId",
		code == "ExpiredToken", code == "InvalidToken":
		return fmt.Errorf("%w: %w (check the AWS credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, and the bucket policy)", fs.ErrPermission, err)
	}
	return err
}

// isExists reports the answers of a conditional PutObject that lost.
func isExists(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "PreconditionFailed", "ConditionalRequestConflict":
			return true
		}
	}
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == 412
}

func (s *S3) listPrefix(k string) string {
	if k == "" {
		return ""
	}
	return k + "/"
}

// List implements Store.
func (s *S3) List(ctx context.Context, dir string) ([]Entry, error) {
	c, k, err := s.key(OpList, dir, true)
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket:    aws.String(s.bucket),
		Prefix:    aws.String(s.listPrefix(k)),
		Delimiter: aws.String("/"),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(withAnswerDeadline(ctx, s.timeout))
		if err != nil {
			return nil, pathErr(OpList, s.uri, c, s.s3Err(err))
		}
		progress.Add(ctx, progress.Listed, len(page.CommonPrefixes)+len(page.Contents))
		for _, cp := range page.CommonPrefixes {
			if r, ok := s.rel(strings.TrimSuffix(aws.ToString(cp.Prefix), "/")); ok {
				out = append(out, Entry{Path: r, IsDir: true})
			}
		}
		for _, o := range page.Contents {
			if r, ok := s.rel(aws.ToString(o.Key)); ok {
				out = append(out, Entry{Path: r, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)})
			}
		}
	}
	sortEntries(out)
	return out, nil
}

// Walk implements Store.
func (s *S3) Walk(ctx context.Context, dir string) ([]Entry, error) {
	c, k, err := s.key(OpWalk, dir, true)
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.listPrefix(k)),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(withAnswerDeadline(ctx, s.timeout))
		if err != nil {
			return nil, pathErr(OpWalk, s.uri, c, s.s3Err(err))
		}
		progress.Add(ctx, progress.Listed, len(page.Contents))
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if strings.HasSuffix(key, "/") {
				continue // directory marker
			}
			if r, ok := s.rel(key); ok {
				out = append(out, Entry{Path: r, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)})
			}
		}
	}
	sortEntries(out)
	return out, nil
}

// Stat implements Store: HeadObject, then, for a missing object, a one-key
// listing to tell a directory (some key below it) from nothing.
func (s *S3) Stat(ctx context.Context, path string) (Entry, error) {
	c, k, err := s.key(OpStat, path, true)
	if err != nil {
		return Entry{}, err
	}
	if c != "" {
		out, err := s.client.HeadObject(withAnswerDeadline(ctx, s.timeout), &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
		if err == nil {
			return Entry{Path: c, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
		}
		if err = s.s3Err(err); !errors.Is(err, fs.ErrNotExist) {
			return Entry{}, pathErr(OpStat, s.uri, c, err)
		}
	}
	lp := s.listPrefix(k)
	out, err := s.client.ListObjectsV2(withAnswerDeadline(ctx, s.timeout), &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket), Prefix: aws.String(lp), MaxKeys: aws.Int32(1),
	})
	if err != nil {
		return Entry{}, pathErr(OpStat, s.uri, c, s.s3Err(err))
	}
	if len(out.Contents) > 0 || lp == "" {
		return Entry{Path: c, IsDir: true}, nil
	}
	return Entry{}, pathErr(OpStat, s.uri, c, fs.ErrNotExist)
}

func (s *S3) get(ctx context.Context, op Op, path string) (string, io.ReadCloser, error) {
	c, k, err := s.key(op, path, false)
	if err != nil {
		return "", nil, err
	}
	out, err := s.client.GetObject(withAnswerDeadline(ctx, s.timeout), &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
	if err != nil {
		return "", nil, pathErr(op, s.uri, c, s.s3Err(err))
	}
	return c, out.Body, nil
}

// ReadFile implements Store.
func (s *S3) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return readWhole(ctx, s.uri, path, s.get, s.s3Err)
}

// Open implements Store; the reader is the GetObject response body.
func (s *S3) Open(ctx context.Context, path string) (io.ReadCloser, error) {
	return openStream(ctx, s.uri, path, s.get, s.s3Err)
}

// WriteFile implements Store (see the type's doc).
func (s *S3) WriteFile(ctx context.Context, path string, data []byte) error {
	return s.put(ctx, path, BytesSource(data))
}

// S3MaxPut is the largest object one PutObject may create (5 GiB); ckpt does not use multipart
// uploads, so Create refuses larger files.
const S3MaxPut = 5 << 30

// Create implements Store: WriteFile's PutObject with the body streamed from src. Over HTTPS the
// SDK reads it once, as it sends it, with a trailing checksum; over plain HTTP it reads it once
// more first, for the checksum and the payload's SHA-256 in the signature. Either way the server
// refuses a body that is not what was declared, so a source that ends early publishes nothing
// (an unsigned payload made versitygw store the truncated file). Retries rewind the body,
// which opens src again.
func (s *S3) Create(ctx context.Context, path string, src Source) error {
	return s.put(ctx, path, src)
}

// put is WriteFile and Create: a HeadObject, then a conditional PutObject with opts.
func (s *S3) put(ctx context.Context, path string, src Source, opts ...func(*s3.Options)) error {
	c, k, err := s.key(OpWrite, path, false)
	if err != nil {
		return err
	}
	if src.Size > S3MaxPut {
		return pathErr(OpWrite, s.uri, c, fmt.Errorf("a file of %d bytes is larger than one S3 PutObject takes (5 GiB), and ckpt does not do multipart uploads", src.Size))
	}
	_, err = s.client.HeadObject(withAnswerDeadline(ctx, s.timeout), &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
	if err == nil {
		return pathErr(OpWrite, s.uri, c, fs.ErrExist)
	}
	if err = s.s3Err(err); !errors.Is(err, fs.ErrNotExist) {
		return pathErr(OpWrite, s.uri, c, err)
	}
	pctx := withAnswerDeadline(ctx, s.timeout)
	body := newRewinder(pctx, src)
	defer body.Close()
	_, err = s.client.PutObject(pctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(k),
		Body:          body,
		ContentLength: aws.Int64(src.Size),
		IfNoneMatch:   aws.String("*"),
	}, opts...)
	if err != nil {
		if isExists(err) {
			return pathErr(OpWrite, s.uri, c, fs.ErrExist)
		}
		return pathErr(OpWrite, s.uri, c, s.s3Err(err))
	}
	return nil
}

// Delete implements Store. S3 answers DeleteObject on a missing key with
// success, which is the contract.
func (s *S3) Delete(ctx context.Context, path string) error {
	c, k, err := s.key(OpDelete, path, false)
	if err != nil {
		return err
	}
	_, err = s.client.DeleteObject(withAnswerDeadline(ctx, s.timeout), &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
	if err != nil {
		if err = s.s3Err(err); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return pathErr(OpDelete, s.uri, c, err)
	}
	return nil
}
