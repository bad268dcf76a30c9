package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os/user"
	"path"
	"strconv"
	"strings"
	"time"
)

// HDFS is a Store on a directory of HDFS, through the WebHDFS REST API that every NameNode
// serves (no Hadoop client or JVM needed). Directories are real: List lists one directory
// (LISTSTATUS_BATCH, page by page), Walk lists every directory below (LISTSTATUS per level),
// and empty directories are listed, as on Local.
//
// WriteFile publishes as Spark's HDFS checkpoint file manager does: it creates a hidden temp
// file beside the target (".name.<uuid>.tmp", TempName, CREATE with overwrite=false, through the DataNode
// the NameNode redirects to), then renames it to the target with rename options NONE, which the
// NameNode applies atomically and refuses when the target exists (FileAlreadyExistsException):
// readers never see a partial file, and of several racing writers exactly one wins; the others
// get fs.ErrExist and their temp files are deleted.
//
// Requests carry user.name (simple authentication): HADOOP_USER_NAME, else the OS user.
// Kerberos (SPNEGO) clusters are not supported. Calls are made once, not retried.
type HDFS struct {
	endpoint string // http(s)://host:port of the NameNode's HTTP server
	root     string // absolute HDFS path of the root, no trailing "/" ("" for /)
	uri      string
	user     string
	timeout  time.Duration
	client   *http.Client // follows OPEN's redirect to a DataNode
	noFollow *http.Client // returns CREATE's redirect
}

// DefaultWebHDFSPort is the NameNode HTTP port of Hadoop 3 (dfs.namenode.http-address), where
// an hdfs://namenode:8020 location is served over WebHDFS unless Options.WebHDFSEndpoint says
// otherwise.
const DefaultWebHDFSPort = "9870"

// hdfsEndpoint resolves the WebHDFS endpoint of a location: webhdfs:// and swebhdfs:// name
// it; for hdfs:// it is opts.WebHDFSEndpoint, CKPT_WEBHDFS_ENDPOINT, or the NameNode's host on
// DefaultWebHDFSPort.
func hdfsEndpoint(scheme, host string, opts Options) (string, error) {
	switch scheme {
	case "webhdfs":
		return "http://" + host, nil
	case "swebhdfs":
		return "https://" + host, nil
	}
	ep := opts.WebHDFSEndpoint
	if ep == "" {
		ep = opts.getenv("CKPT_WEBHDFS_ENDPOINT")
	}
	if ep != "" {
		if !strings.HasPrefix(ep, "http://") && !strings.HasPrefix(ep, "https://") {
			return "", fmt.Errorf("storage: WebHDFS endpoint %q needs a scheme, e.g. http://%s", ep, ep)
		}
		return strings.TrimRight(ep, "/"), nil
	}
	h := host
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") {
		h = h[:i]
	}
	if h == "" {
		return "", errors.New("storage: hdfs:// location without a NameNode host: give the WebHDFS endpoint with --webhdfs-endpoint or CKPT_WEBHDFS_ENDPOINT")
	}
	return "http://" + h + ":" + DefaultWebHDFSPort, nil
}

// NewHDFS returns a store on the HDFS directory root (absolute; "/" or "" for the file
// system's root) served by the WebHDFS endpoint (http://namenode:9870). Each request may wait
// opts.Timeout (see Options) for the endpoint. No request is made.
func NewHDFS(endpoint, root string, opts Options) (*HDFS, error) {
	timeout, err := storeTimeout(opts)
	if err != nil {
		return nil, err
	}
	u := opts.getenv("HADOOP_USER_NAME")
	if u == "" {
		if cu, err := user.Current(); err == nil {
			u = cu.Username
		}
	}
	root = path.Clean("/" + root)
	if root == "/" {
		root = ""
	}
	tr := timeoutTransport(timeout)
	endpoint = strings.TrimRight(endpoint, "/")
	return &HDFS{
		endpoint: endpoint,
		root:     root,
		uri:      "webhdfs://" + strings.TrimPrefix(strings.TrimPrefix(endpoint, "http://"), "https://") + root,
		user:     u,
		timeout:  timeout,
		client:   &http.Client{Transport: tr},
		noFollow: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}, nil
}

// URI returns the root as given to Open, or webhdfs://host:port/root.
func (s *HDFS) URI() string { return s.uri }

// Root returns the absolute HDFS path of the root ("" for /).
func (s *HDFS) Root() string { return s.root }

// Endpoint returns the WebHDFS endpoint, http(s)://host:port.
func (s *HDFS) Endpoint() string { return s.endpoint }

func (s *HDFS) key(op Op, p string, allowRoot bool) (string, string, error) {
	c, err := cleanPath(p, allowRoot)
	if err != nil {
		return "", "", pathErr(op, s.uri, p, err)
	}
	full := s.root
	if c != "" {
		full += "/" + c
	}
	if full == "" {
		full = "/"
	}
	return c, full, nil
}

// opURL is the WebHDFS URL of op on the absolute path p with extra parameters.
func (s *HDFS) opURL(p, op string, params ...string) string {
	var b strings.Builder
	b.WriteString(s.endpoint)
	b.WriteString("/webhdfs/v1")
	for _, el := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		b.WriteString("/")
		b.WriteString(url.PathEscape(el))
	}
	q := url.Values{"op": {op}}
	if s.user != "" {
		q.Set("user.name", s.user)
	}
	for i := 0; i+1 < len(params); i += 2 {
		q.Set(params[i], params[i+1])
	}
	return b.String() + "?" + q.Encode()
}

// remoteError is WebHDFS's error body.
type remoteError struct {
	RemoteException struct {
		Exception     string `json:"exception"`
		JavaClassName string `json:"javaClassName"`
		Message       string `json:"message"`
	} `json:"RemoteException"`
}

// HDFSError is an error answer of WebHDFS: the Java exception the NameNode or DataNode threw.
type HDFSError struct {
	Status    int
	Exception string
	Message   string
}

func (e *HDFSError) Error() string {
	if e.Exception == "" {
		return fmt.Sprintf("WebHDFS answered HTTP %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("WebHDFS answered HTTP %d: %s: %s", e.Status, e.Exception, e.Message)
}

// Is maps HDFS exceptions to the fs errors.
func (e *HDFSError) Is(target error) bool {
	switch target {
	case fs.ErrNotExist:
		return e.Exception == "FileNotFoundException" || (e.Exception == "" && e.Status == http.StatusNotFound)
	case fs.ErrExist:
		return e.Exception == "FileAlreadyExistsException"
	case fs.ErrPermission:
		return e.Exception == "AccessControlException" || e.Exception == "SecurityException" || e.Status == http.StatusUnauthorized
	}
	return false
}

func readHDFSError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var re remoteError
	if json.Unmarshal(body, &re) == nil && re.RemoteException.Exception != "" {
		return &HDFSError{Status: resp.StatusCode, Exception: re.RemoteException.Exception, Message: re.RemoteException.Message}
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = resp.Status
	}
	return &HDFSError{Status: resp.StatusCode, Message: msg}
}

func (s *HDFS) err(err error) error {
	if err == nil {
		return nil
	}
	if te := asTimeout("WebHDFS", s.endpoint, s.timeout, err); te != nil {
		return te
	}
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%w (check the HDFS user: HADOOP_USER_NAME, and the directory's permissions)", err)
	}
	return err
}

// do sends a request; a non-2xx answer (other than a redirect returned by noFollow) becomes an
// *HDFSError.
func (s *HDFS) do(ctx context.Context, c *http.Client, method, u string, body *Source) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
		req.ContentLength = body.Size
		req.Body = http.NoBody
		if body.Size > 0 {
			req.Body = newRewinder(ctx, *body) // closed by the transport
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, s.err(err)
	}
	if resp.StatusCode >= 300 && !(c == s.noFollow && resp.StatusCode < 400) {
		defer resp.Body.Close()
		return nil, s.err(readHDFSError(resp))
	}
	return resp, nil
}

// doJSON sends a request and decodes the JSON answer into out (nil: discard it).
func (s *HDFS) doJSON(ctx context.Context, method, u string, out any) error {
	resp, err := s.do(ctx, s.client, method, u, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return s.err(fmt.Errorf("WebHDFS answer: %w", err))
	}
	return nil
}

type hdfsStatus struct {
	PathSuffix       string `json:"pathSuffix"`
	Type             string `json:"type"`
	Length           int64  `json:"length"`
	ModificationTime int64  `json:"modificationTime"`
}

func (st hdfsStatus) entry(p string) Entry {
	e := Entry{Path: p, IsDir: st.Type == "DIRECTORY"}
	if !e.IsDir {
		e.Size = st.Length
	}
	if st.ModificationTime > 0 {
		e.ModTime = time.UnixMilli(st.ModificationTime)
	}
	return e
}

// list calls fn for each child of the directory full (absolute); a missing directory or a file
// calls fn never.
func (s *HDFS) list(ctx context.Context, full string, fn func(st hdfsStatus)) error {
	after := ""
	for {
		var out struct {
			DirectoryListing struct {
				PartialListing struct {
					FileStatuses struct {
						FileStatus []hdfsStatus `json:"FileStatus"`
					} `json:"FileStatuses"`
				} `json:"partialListing"`
				RemainingEntries int `json:"remainingEntries"`
			} `json:"DirectoryListing"`
		}
		var params []string
		if after != "" {
			params = []string{"startAfter", after}
		}
		err := s.doJSON(ctx, http.MethodGet, s.opURL(full, "LISTSTATUS_BATCH", params...), &out)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		sts := out.DirectoryListing.PartialListing.FileStatuses.FileStatus
		for _, st := range sts {
			if st.PathSuffix == "" {
				return nil // full is a file: its listing is itself
			}
			fn(st)
		}
		if out.DirectoryListing.RemainingEntries == 0 || len(sts) == 0 {
			return nil
		}
		after = sts[len(sts)-1].PathSuffix
	}
}

// List implements Store.
func (s *HDFS) List(ctx context.Context, dir string) ([]Entry, error) {
	c, full, err := s.key(OpList, dir, true)
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	err = s.list(ctx, full, func(st hdfsStatus) {
		out = append(out, st.entry(Join(c, st.PathSuffix)))
	})
	if err != nil {
		return nil, pathErr(OpList, s.uri, c, err)
	}
	sortEntries(out)
	return out, nil
}

// Walk implements Store.
func (s *HDFS) Walk(ctx context.Context, dir string) ([]Entry, error) {
	c, full, err := s.key(OpWalk, dir, true)
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	type level struct{ rel, full string }
	todo := []level{{c, full}}
	for len(todo) > 0 {
		l := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		err := s.list(ctx, l.full, func(st hdfsStatus) {
			rel := Join(l.rel, st.PathSuffix)
			if st.Type == "DIRECTORY" {
				todo = append(todo, level{rel, strings.TrimSuffix(l.full, "/") + "/" + st.PathSuffix})
				return
			}
			out = append(out, st.entry(rel))
		})
		if err != nil {
			return nil, pathErr(OpWalk, s.uri, l.rel, err)
		}
	}
	sortEntries(out)
	return out, nil
}

func (s *HDFS) status(ctx context.Context, full string) (hdfsStatus, error) {
	var out struct {
		FileStatus hdfsStatus `json:"FileStatus"`
	}
	err := s.doJSON(ctx, http.MethodGet, s.opURL(full, "GETFILESTATUS"), &out)
	return out.FileStatus, err
}

// Stat implements Store.
func (s *HDFS) Stat(ctx context.Context, p string) (Entry, error) {
	c, full, err := s.key(OpStat, p, true)
	if err != nil {
		return Entry{}, err
	}
	st, err := s.status(ctx, full)
	if err != nil {
		return Entry{}, pathErr(OpStat, s.uri, c, err)
	}
	return st.entry(c), nil
}

func (s *HDFS) get(ctx context.Context, op Op, p string) (string, io.ReadCloser, error) {
	c, full, err := s.key(op, p, false)
	if err != nil {
		return "", nil, err
	}
	resp, err := s.do(ctx, s.client, http.MethodGet, s.opURL(full, "OPEN"), nil)
	if err != nil {
		return "", nil, pathErr(op, s.uri, c, err)
	}
	return c, resp.Body, nil
}

// ReadFile implements Store.
func (s *HDFS) ReadFile(ctx context.Context, p string) ([]byte, error) {
	return readWhole(ctx, s.uri, p, s.get, s.err)
}

// Open implements Store; the reader streams from the DataNode.
func (s *HDFS) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	return openStream(ctx, s.uri, p, s.get, s.err)
}

// create writes src to the new file full (overwrite=false): the NameNode redirects to a
// DataNode, which takes the bytes.
func (s *HDFS) create(ctx context.Context, full string, src Source) error {
	resp, err := s.do(ctx, s.noFollow, http.MethodPut, s.opURL(full, "CREATE", "overwrite", "false"), nil)
	if err != nil {
		return err
	}
	loc := resp.Header.Get("Location")
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || loc == "" {
		return fmt.Errorf("WebHDFS CREATE answered HTTP %d without a DataNode location", resp.StatusCode)
	}
	resp, err = s.do(ctx, s.noFollow, http.MethodPut, loc, &src)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("WebHDFS CREATE on the DataNode answered HTTP %d", resp.StatusCode)
	}
	return nil
}

// WriteFile implements Store (see the type's doc).
func (s *HDFS) WriteFile(ctx context.Context, p string, data []byte) error {
	return s.Create(ctx, p, BytesSource(data))
}

// Create implements Store: WriteFile with the temp file's content streamed from src.
func (s *HDFS) Create(ctx context.Context, p string, src Source) error {
	c, full, err := s.key(OpWrite, p, false)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return pathErr(OpWrite, s.uri, c, err)
	}
	// Spark's own check first: a file already there is refused without writing anything.
	if _, err := s.status(ctx, full); err == nil {
		return pathErr(OpWrite, s.uri, c, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return pathErr(OpWrite, s.uri, c, err)
	}
	return s.publish(ctx, c, full, src)
}

// publish writes a temp file beside full and renames it to full, refusing an existing target.
func (s *HDFS) publish(ctx context.Context, c, full string, src Source) error {
	dir, name := path.Split(full)
	tmp := dir + TempName(name)
	if err := s.create(ctx, tmp, src); err != nil {
		s.removeTemp(tmp)
		return pathErr(OpWrite, s.uri, c, err)
	}
	err := s.doJSON(ctx, http.MethodPut, s.opURL(tmp, "RENAME", "destination", full, "renameoptions", "NONE"), nil)
	if err != nil {
		s.removeTemp(tmp)
		if errors.Is(err, fs.ErrExist) {
			return pathErr(OpWrite, s.uri, c, fs.ErrExist)
		}
		return pathErr(OpWrite, s.uri, c, err)
	}
	return nil
}

// removeTemp deletes a temp file of a failed write, even when the caller's context is done.
// A body cut off mid-way leaves the DataNode to create and close the temp file on its own
// time, possibly after the first delete: it is deleted again while it keeps reappearing, for a
// short while (--resume removes what is left after that).
func (s *HDFS) removeTemp(full string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	for range tempChecks {
		_ = s.doJSON(ctx, http.MethodDelete, s.opURL(full, "DELETE", "recursive", "false"), nil)
		if sleepCtx(ctx, tempCheckGap) != nil {
			return
		}
		if _, err := s.status(ctx, full); err != nil {
			return // gone, or the NameNode no longer answers
		}
	}
}

// tempChecks and tempCheckGap bound removeTemp's wait for a temp file that reappears.
const (
	tempChecks   = 10
	tempCheckGap = 100 * time.Millisecond
)

// Delete implements Store. A missing file is not an error; a non-empty directory is.
func (s *HDFS) Delete(ctx context.Context, p string) error {
	c, full, err := s.key(OpDelete, p, false)
	if err != nil {
		return err
	}
	var out struct {
		Boolean bool `json:"boolean"`
	}
	if err := s.doJSON(ctx, http.MethodDelete, s.opURL(full, "DELETE", "recursive", "false"), &out); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return pathErr(OpDelete, s.uri, c, err)
	}
	return nil
}

// parseHDFSURI splits hdfs://host:port/path (also webhdfs://, swebhdfs://) into scheme, host
// and path.
func parseHDFSURI(uri string) (scheme, host, p string, err error) {
	m := uriScheme.FindStringSubmatch(uri)
	if m == nil {
		return "", "", "", fmt.Errorf("storage: bad HDFS URI %q", uri)
	}
	scheme = strings.ToLower(m[1])
	rest, ok := strings.CutPrefix(uri[len(m[0]):], "//")
	if !ok {
		return "", "", "", fmt.Errorf("storage: bad HDFS URI %q: want %s://namenode:port/path", uri, scheme)
	}
	host, p, _ = strings.Cut(rest, "/")
	if scheme != "hdfs" && host == "" {
		return "", "", "", fmt.Errorf("storage: %s URI %q has no host: want %s://namenode:port/path", scheme, uri, scheme)
	}
	if h, port, ok := strings.Cut(host, ":"); ok {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil || h == "" {
			return "", "", "", fmt.Errorf("storage: bad HDFS URI %q: bad host:port %q", uri, host)
		}
	}
	return scheme, host, "/" + p, nil
}
