package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Entry describes one file or directory in a Store.
type Entry struct {
	// Path is slash-separated and relative to the store root ("offsets/5").
	Path string
	// Size is the file size in bytes; 0 for directories.
	Size int64
	// ModTime is the last modification time. Object stores have no directory
	// times: directories from Mem and S3 have the zero time.
	ModTime time.Time
	// IsDir reports a directory (on object stores: a common key prefix).
	IsDir bool
}

// Store is a checkpoint root. Implementations are safe for concurrent use.
//
// Every method validates its path first (see ErrInvalidPath), checks ctx, and
// returns errors as *PathError.
type Store interface {
	// URI is the root as the user typed it: a local path, file:///abs,
	// s3://bucket/prefix or mem://name.
	URI() string
	// List returns the direct children of dir ("" is the root), sorted by
	// Path: files and sub-directories (IsDir). A missing dir, or a dir that
	// is a file, gives an empty list and no error, as on an object store.
	List(ctx context.Context, dir string) ([]Entry, error)
	// Walk returns every file (never a directory) at any depth below dir,
	// sorted by Path. A missing dir gives an empty list and no error.
	Walk(ctx context.Context, dir string) ([]Entry, error)
	// Stat describes one file or directory. A missing path gives an error
	// wrapping fs.ErrNotExist.
	Stat(ctx context.Context, path string) (Entry, error)
	// ReadFile returns the whole file. A missing path gives an error
	// wrapping fs.ErrNotExist.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// Open streams a file, so a log with a million entries need not be held
	// in memory. A missing path gives an error wrapping fs.ErrNotExist from
	// Open itself, not from the first Read. The caller closes the reader.
	Open(ctx context.Context, path string) (io.ReadCloser, error)
	// WriteFile atomically creates path with data, creating parent
	// directories as needed. It never replaces an existing file: if path
	// exists it returns an error wrapping fs.ErrExist and the old bytes stay
	// (Spark's createAtomic with overwriteIfPossible=false). Readers never
	// see a partial file.
	WriteFile(ctx context.Context, path string, data []byte) error
	// Create is WriteFile with the content streamed from src (see Source), for files that may
	// be large (data and state files, compact logs): the store holds a copy buffer, not the
	// file. Create-only and atomic as WriteFile, and its errors are PathErrors of OpWrite. A
	// source that gives other than src.Size bytes fails it (ErrSourceSize) and publishes
	// nothing. Remote stores send the file in one request, which limits its size: S3 5 GiB,
	// Azure 5000 MiB (a larger source fails before anything is sent).
	Create(ctx context.Context, path string, src Source) error
	// Delete removes a file. A missing path is not an error, so deletes can
	// be retried. Directories are not removed recursively (Local removes an
	// empty directory, matching object stores where empty directories do
	// not exist).
	Delete(ctx context.Context, path string) error
}

// Op names a Store operation; it is PathError.Op and the key of Faulty's
// latency and counters.
type Op string

// The Store operations.
const (
	OpList   Op = "list"
	OpWalk   Op = "walk"
	OpStat   Op = "stat"
	OpRead   Op = "read" // ReadFile
	OpOpen   Op = "open"
	OpWrite  Op = "write" // WriteFile and Create
	OpDelete Op = "delete"
)

// Ops lists every Op in a fixed order.
var Ops = []Op{OpList, OpWalk, OpStat, OpRead, OpOpen, OpWrite, OpDelete}

// Options configures the stores Open creates. The zero value is the default.
type Options struct {
	// S3PathStyle forces path-style addressing (http://host/bucket/key),
	// which most S3-compatible servers (MinIO, versitygw, Ceph) need. It is
	// also switched on by the environment variable CKPT_S3_PATH_STYLE=true.
	// Default: false, virtual-hosted style as AWS prefers.
	S3PathStyle bool
	// S3Endpoint overrides the endpoint URL, scheme included
	// ("http://127.0.0.1:7070"). Default: empty, in which case the SDK's
	// standard handling applies: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the
	// profile's endpoint_url, otherwise AWS itself.
	S3Endpoint string
	// S3Region overrides the region. Default: the AWS config chain
	// (AWS_REGION, AWS_DEFAULT_REGION, the profile), falling back to
	// us-east-1.
	S3Region string
	// S3Timeout is how long one S3 call may wait for the endpoint to connect and start
	// answering, over all its attempts (the SDK tries up to 3 times within it), and how long each
	// wait for more of an answer's body may take. Default: 0, which means CKPT_S3_TIMEOUT (a Go
	// duration such as "45s") when set, else Timeout's value (30s by default). A call that
	// times out fails with an *S3TimeoutError naming the endpoint and is not retried.
	S3Timeout time.Duration
	// Trace, when set, receives one line per S3 request (operation, URL, status, time): the
	// global --verbose and --debug. Default: nil, nothing logged.
	Trace io.Writer
	// Debug adds the SDK's own log (retries, response headers) to Trace. Without it the SDK
	// logs nothing: its warnings never reach stderr. Default: false.
	Debug bool
	// Timeout is how long one call to GCS, Azure Blob Storage or WebHDFS may wait for the
	// endpoint to connect and start answering, over all its attempts (the clients try up to 3
	// times within it), and how long each wait for more of an answer's body may take (so a
	// server that sends headers and stalls fails, and a large file that keeps streaming does
	// not). It is also S3's when neither S3Timeout nor CKPT_S3_TIMEOUT is set. Default: 0, which
	// means CKPT_STORE_TIMEOUT (a Go duration such as "45s") when set, else DefaultTimeout
	// (30s). A call that times out fails with a *TimeoutError (S3: an *S3TimeoutError) naming
	// the endpoint and is not retried.
	Timeout time.Duration
	// WebHDFSEndpoint is the NameNode's HTTP server for hdfs:// locations
	// ("http://namenode:9870"; for HA name services, the active NameNode's, or an HttpFS
	// gateway). Default: empty, which means CKPT_WEBHDFS_ENDPOINT when set, else the
	// location's host on DefaultWebHDFSPort (9870). webhdfs:// and swebhdfs:// locations name
	// their endpoint themselves.
	WebHDFSEndpoint string
	// Getenv reads the environment variables the stores take their defaults from
	// (CKPT_STORE_TIMEOUT, CKPT_S3_TIMEOUT, CKPT_S3_PATH_STYLE, CKPT_WEBHDFS_ENDPOINT,
	// HADOOP_USER_NAME, STORAGE_EMULATOR_HOST, AZURE_STORAGE_CONNECTION_STRING,
	// AZURE_STORAGE_KEY): the commands pass their Env's (cli.Env.OpenStore), so that storage
	// reads the environment only through it. Default: nil, the process environment (os.Getenv),
	// for callers without an Env. The cloud SDKs read their own variables (AWS_*) themselves.
	Getenv func(string) string
}

// DefaultS3Timeout is Options.S3Timeout's default: S3 starts answering a
// request within a second or so, even a listing of 1,000 keys, so 30s
// leaves a wide margin for slow S3-compatible servers while an endpoint
// that accepts connections and never answers fails in 30s, all attempts
// included, instead of hanging.
const DefaultS3Timeout = 30 * time.Second

// ErrLocation marks an error in how a location is written (no bucket, an unknown scheme, an
// endpoint without a scheme): the command line is wrong, nothing was tried. Callers map it to a
// usage error.
var ErrLocation = errors.New("not a valid location")

// locationError is a location written wrong: its message, and errors.Is(err, ErrLocation).
type locationError struct{ err error }

func (e *locationError) Error() string        { return e.err.Error() }
func (e *locationError) Unwrap() error        { return e.err }
func (e *locationError) Is(target error) bool { return target == ErrLocation }

func badLocation(format string, args ...any) error {
	return &locationError{fmt.Errorf(format, args...)}
}

var uriScheme = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*):`)

// Open opens the store a user-typed location names:
//
//   - a plain path, absolute or relative (resolved against the working
//     directory now): Local;
//   - file:///abs/path, or Hadoop's file:/abs/path as Spark prints it: Local;
//   - s3://bucket/prefix; s3a:// and s3n:// (Hadoop's spellings, as found in
//     Spark configs) are accepted as the same thing: S3, configured by opts;
//   - gs://bucket/prefix: GCS (NewGCS);
//   - abfss://container@account.dfs.core.windows.net/path (ADLS Gen2) and
//     wasbs://container@account.blob.core.windows.net/path (Blob Storage), and
//     their plain abfs:// and wasb:// spellings: Azure, on the Blob endpoint
//     (ParseAzureURI, NewAzure);
//   - hdfs://namenode:port/path over WebHDFS (at Options.WebHDFSEndpoint, by
//     default the NameNode's host on port 9870), and webhdfs://host:port/path
//     and swebhdfs://host:port/path naming the HTTP(S) endpoint: HDFS (NewHDFS);
//   - mem://name[/prefix]: the process-global in-memory store of that name
//     (MemNamed), for tests.
//
// The returned store's URI is uri exactly as given. Open does no I/O except
// finding credentials (AWS configuration; Google's Application Default
// Credentials; Azure's credential chain); a bad credential shows up on the
// first request.
func Open(ctx context.Context, uri string, opts Options) (Store, error) {
	if uri == "" {
		return nil, badLocation("storage: empty checkpoint location")
	}
	m := uriScheme.FindStringSubmatch(uri)
	// One letter before ':' is a Windows drive ("C:\ckpt"), not a scheme.
	if m == nil || len(m[1]) == 1 {
		l, err := NewLocal(uri)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	scheme := strings.ToLower(m[1])
	switch scheme {
	case "file":
		u, err := url.Parse(uri)
		if err != nil {
			return nil, badLocation("storage: bad file URI %q: %w", uri, err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, badLocation("storage: file URI %q names host %q; only local files are supported", uri, u.Host)
		}
		p := u.Path
		if p == "" {
			p = u.Opaque
		}
		if p == "" {
			return nil, badLocation("storage: file URI %q has no path", uri)
		}
		// file:///C:/ckpt on Windows: drop the slash before the drive.
		if len(p) >= 3 && p[0] == '/' && p[2] == ':' {
			p = p[1:]
		}
		l, err := NewLocal(filepath.FromSlash(p))
		if err != nil {
			return nil, err
		}
		l.uri = uri
		return l, nil
	case "s3", "s3a", "s3n":
		rest := uri[len(m[0]):]
		if !strings.HasPrefix(rest, "//") {
			return nil, badLocation("storage: bad S3 URI %q: want s3://bucket/prefix", uri)
		}
		rest = rest[2:]
		bucket, prefix, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return nil, badLocation("storage: S3 URI %q has no bucket: want s3://bucket/prefix", uri)
		}
		s, err := NewS3(ctx, bucket, prefix, opts)
		if err != nil {
			return nil, err
		}
		s.uri = uri
		return s, nil
	case "gs":
		bucket, prefix, ok := bucketURI(uri[len(m[0]):])
		if !ok {
			return nil, badLocation("storage: bad GCS URI %q: want gs://bucket/prefix", uri)
		}
		s, err := NewGCS(ctx, bucket, prefix, opts)
		if err != nil {
			return nil, err
		}
		s.uri = uri
		return s, nil
	case "abfss", "abfs", "wasbs", "wasb":
		loc, err := ParseAzureURI(uri)
		if err != nil {
			return nil, err
		}
		s, err := NewAzure(loc, opts)
		if err != nil {
			return nil, err
		}
		s.uri = uri
		return s, nil
	case "mem":
		rest := uri[len(m[0]):]
		if !strings.HasPrefix(rest, "//") {
			return nil, badLocation("storage: bad mem URI %q: want mem://name", uri)
		}
		name, prefix, _ := strings.Cut(rest[2:], "/")
		if name == "" {
			return nil, badLocation("storage: mem URI %q has no name: want mem://name", uri)
		}
		mem := MemNamed(name)
		if prefix = strings.Trim(prefix, "/"); prefix != "" {
			p, err := cleanPath(prefix, true)
			if err != nil {
				return nil, fmt.Errorf("storage: mem URI %q: %w", uri, err)
			}
			mem = mem.Sub(p)
		}
		mem.uri = uri
		return mem, nil
	case "hdfs", "webhdfs", "swebhdfs":
		sch, host, p, err := parseHDFSURI(uri)
		if err != nil {
			return nil, err
		}
		ep, err := hdfsEndpoint(sch, host, opts)
		if err != nil {
			return nil, err
		}
		s, err := NewHDFS(ep, p, opts)
		if err != nil {
			return nil, err
		}
		s.uri = uri
		return s, nil
	case "viewfs":
		return nil, badLocation("storage: viewfs:// is not supported: give the hdfs:// location the mount point resolves to, or copy the checkpoint to local disk (hdfs dfs -get)")
	default:
		return nil, badLocation("storage: unsupported location scheme %q in %q: want a local path, file://, s3://, gs://, abfss://, wasbs://, hdfs:// or mem://", scheme, uri)
	}
}

func sortEntries(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
}

// ownTempTag starts the UUID of ckpt's own temporary files: "ckpt" in ASCII.
const ownTempTag = "636b7074"

// tempUUID returns the UUID in the name of a temporary file ckpt writes: Spark's form (a UUID,
// so Spark and doctor see a temp file of the target) but RFC 9562's version 8 (vendor-specific)
// starting with ownTempTag, where Spark's are random (version 4). A leftover of a killed ckpt is
// told from Spark's by its name alone (IsOwnTemp).
func tempUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	copy(b[:4], "ckpt")
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// TempName is the name of the temporary file a write of the file name uses where the store
// needs one (HDFS always, Local without O_TMPFILE): Spark's ".<name>.<uuid>.tmp" with
// tempUUID.
func TempName(name string) string { return "." + name + "." + tempUUID() + ".tmp" }

// IsOwnTemp reports whether the base name is one TempName made: a temporary file of ckpt's own,
// left by a write that was killed before it could rename or remove it.
func IsOwnTemp(name string) bool {
	inner, ok := strings.CutSuffix(name, ".tmp")
	if !ok || !strings.HasPrefix(inner, ".") || len(inner) < 1+2+36 {
		return false
	}
	u := inner[len(inner)-36:]
	if inner[len(inner)-37] != '.' || !strings.HasPrefix(u, ownTempTag+"-") || u[14] != '8' {
		return false
	}
	for i, c := range u {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// readWhole is ReadFile for the remote stores: get opens the object (its errors already name the
// path), and a failure while reading the body is mapped by mapErr, the store's error translation.
func readWhole[R io.ReadCloser](ctx context.Context, uri, path string, get func(context.Context, Op, string) (string, R, error), mapErr func(error) error) ([]byte, error) {
	c, body, err := get(ctx, OpRead, path)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, pathErr(OpRead, uri, c, mapErr(err))
	}
	return b, nil
}

// streamBody is the reader Open returns for the remote stores: a failure while reading the body
// (the endpoint stalled, the connection dropped) is mapped by mapErr, the store's error
// translation, and names the file, as ReadFile's does.
type streamBody struct {
	io.ReadCloser
	uri, path string
	mapErr    func(error) error
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = pathErr(OpOpen, b.uri, b.path, b.mapErr(err))
	}
	return n, err
}

// openStream is Open for the remote stores, over get (see readWhole).
func openStream[R io.ReadCloser](ctx context.Context, uri, path string, get func(context.Context, Op, string) (string, R, error), mapErr func(error) error) (io.ReadCloser, error) {
	c, body, err := get(ctx, OpOpen, path)
	if err != nil {
		return nil, err
	}
	return &streamBody{ReadCloser: body, uri: uri, path: c, mapErr: mapErr}, nil
}

// getenv reads an environment variable through Getenv.
func (o Options) getenv(key string) string {
	if o.Getenv != nil {
		return o.Getenv(key)
	}
	return os.Getenv(key)
}
