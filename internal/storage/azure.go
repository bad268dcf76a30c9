package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Azure is a Store on an Azure Blob Storage container below a name prefix, through the Azure
// SDK for Go (azblob). It serves both wasbs:// (Blob) and abfss:// (ADLS Gen2) locations: an
// ADLS Gen2 account answers the Blob API on its blob endpoint, so abfss://c@acct.dfs.core.windows.net
// is read and written at https://acct.blob.core.windows.net/c. Directories are name prefixes:
// List lists with delimiter "/", Walk without one, both following every page. On an account with
// a hierarchical namespace, directories are also entries of their own (zero-length blobs with the
// metadata hdi_isfolder=true in the Blob API): they are never listed as files, and Stat calls them
// directories.
//
// WriteFile is one Put Blob with If-None-Match: *, which Azure applies atomically: of several
// racing writers exactly one wins and the others get 409 BlobAlreadyExists (or 412), returned as
// fs.ErrExist. A Put Blob commits the whole blob or nothing.
//
// Credentials, first found wins: AZURE_STORAGE_CONNECTION_STRING (an account key or SAS, and
// the endpoint: how the tests reach Azurite); AZURE_STORAGE_KEY, the account key of the
// location's account; otherwise azidentity's DefaultAzureCredential (service principal or
// workload identity from AZURE_* variables, managed identity, Azure CLI or Azure Developer CLI
// login).
type Azure struct {
	client   *container.Client
	prefix   string // no leading or trailing "/"
	uri      string
	endpoint string
	timeout  time.Duration
}

// AzureLocation is an abfss://, abfs://, wasbs:// or wasb:// location taken apart.
type AzureLocation struct {
	// Container is the container (ADLS Gen2: file system) name.
	Container string
	// Account is the storage account name.
	Account string
	// BlobURL is the container's URL on the Blob endpoint, e.g.
	// https://acct.blob.core.windows.net/container.
	BlobURL string
	// Prefix is the path below the container, without slashes at either end.
	Prefix string
}

// ParseAzureURI takes apart a Hadoop-style Azure location:
// scheme://container@account.(dfs|blob).core.windows.net/path, for schemes abfss, abfs, wasbs
// and wasb, and the sovereign clouds' suffixes (core.chinacloudapi.cn, …). The Blob endpoint is
// always https: plain-HTTP Azure endpoints exist only for emulators, which a connection string
// names.
func ParseAzureURI(uri string) (AzureLocation, error) {
	bad := func(why string) (AzureLocation, error) {
		return AzureLocation{}, badLocation("storage: bad Azure URI %q: %s: want abfss://container@account.dfs.core.windows.net/path or wasbs://container@account.blob.core.windows.net/path", uri, why)
	}
	m := uriScheme.FindStringSubmatch(uri)
	if m == nil {
		return bad("no scheme")
	}
	switch strings.ToLower(m[1]) {
	case "abfss", "abfs", "wasbs", "wasb":
	default:
		return bad("not an Azure scheme")
	}
	hostPath, ok := strings.CutPrefix(uri[len(m[0]):], "//")
	if !ok {
		return bad("no //")
	}
	host, p, _ := strings.Cut(hostPath, "/")
	cont, host, ok := strings.Cut(host, "@")
	if !ok || cont == "" {
		return bad("no container@ before the account host")
	}
	account, rest, ok := strings.Cut(host, ".")
	if !ok || account == "" {
		return bad("no account host")
	}
	service, suffix, ok := strings.Cut(rest, ".")
	if service = strings.ToLower(service); !ok || (service != "dfs" && service != "blob") || suffix == "" || strings.ContainsAny(suffix, ":") {
		return bad("the host is not account.dfs.<cloud suffix> or account.blob.<cloud suffix>")
	}
	return AzureLocation{
		Container: cont,
		Account:   account,
		BlobURL:   "https://" + account + ".blob." + suffix + "/" + cont,
		Prefix:    strings.Trim(p, "/"),
	}, nil
}

// connStringValue returns key's value in an Azure connection string ("" when absent).
func connStringValue(cs, key string) string {
	for _, part := range strings.Split(cs, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && strings.EqualFold(k, key) {
			return v
		}
	}
	return ""
}

// azureAttempts is how often one call is tried (the SDK's retry policy counts the retries).
const azureAttempts = 3

// NewAzure returns an Azure store for loc (see the type's doc for the credentials). Each call
// may wait opts.Timeout (see Options) for the endpoint, all attempts included. No request is made.
func NewAzure(loc AzureLocation, opts Options) (*Azure, error) {
	timeout, err := storeTimeout(opts)
	if err != nil {
		return nil, err
	}
	co := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Transport: timeoutTransport(timeout)},
		Retry:     policy.RetryOptions{MaxRetries: azureAttempts - 1, RetryDelay: 500 * time.Millisecond},
	}}
	var client *container.Client
	switch cs, key := opts.getenv("AZURE_STORAGE_CONNECTION_STRING"), opts.getenv("AZURE_STORAGE_KEY"); {
	case cs != "":
		if a := connStringValue(cs, "AccountName"); a != "" && !strings.EqualFold(a, loc.Account) {
			return nil, fmt.Errorf("storage: AZURE_STORAGE_CONNECTION_STRING is for the account %q, but the location names the account %q", a, loc.Account)
		}
		client, err = container.NewClientFromConnectionString(cs, loc.Container, co)
	case key != "":
		var cred *container.SharedKeyCredential
		if cred, err = container.NewSharedKeyCredential(loc.Account, key); err == nil {
			client, err = container.NewClientWithSharedKeyCredential(loc.BlobURL, cred, co)
		}
	default:
		var cred *azidentity.DefaultAzureCredential
		cred, err = azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{ClientOptions: co.ClientOptions})
		if err == nil {
			client, err = container.NewClient(loc.BlobURL, cred, co)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("storage: Azure credentials for the account %s: %w", loc.Account, err)
	}
	st := NewAzureFromClient(client, loc.Prefix)
	st.timeout = timeout
	return st, nil
}

// NewAzureFromClient returns an Azure store using a ready container client, for callers (and
// tests) that configure it themselves. Its URI is the container's URL and the prefix.
func NewAzureFromClient(client *container.Client, prefix string) *Azure {
	prefix = strings.Trim(prefix, "/")
	uri := strings.TrimRight(client.URL(), "/")
	if prefix != "" {
		uri += "/" + prefix
	}
	endpoint := client.URL()
	if i := strings.Index(endpoint, "://"); i >= 0 {
		if j := strings.IndexByte(endpoint[i+3:], '/'); j >= 0 {
			endpoint = endpoint[:i+3+j]
		}
	}
	return &Azure{client: client, prefix: prefix, uri: uri, endpoint: endpoint}
}

// URI returns the root as given to Open, or the container URL and prefix.
func (s *Azure) URI() string { return s.uri }

// Client returns the underlying container client.
func (s *Azure) Client() *container.Client { return s.client }

// Prefix returns the name prefix of the root, without slashes at either end.
func (s *Azure) Prefix() string { return s.prefix }

func (s *Azure) key(op Op, p string, allowRoot bool) (string, string, error) {
	c, err := cleanPath(p, allowRoot)
	if err != nil {
		return "", "", pathErr(op, s.uri, p, err)
	}
	return c, Join(s.prefix, c), nil
}

func (s *Azure) err(err error) error {
	if err == nil {
		return nil
	}
	if te := asTimeout("Azure Blob Storage", s.endpoint, s.timeout, err); te != nil {
		return te
	}
	if errors.Is(err, context.Canceled) {
		// The caller stopped (a signal): the SDK's layers around it say nothing more.
		return context.Canceled
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	switch {
	case bloberror.HasCode(err, bloberror.ContainerNotFound):
		return fmt.Errorf("the container does not exist: %w", err)
	case bloberror.HasCode(err, bloberror.BlobNotFound):
		return fs.ErrNotExist
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		switch re.StatusCode {
		case http.StatusNotFound:
			return fs.ErrNotExist
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%w: %w (check the Azure credentials: AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY, az login or the managed identity, and the container's role assignments)", fs.ErrPermission, err)
		}
	}
	var ae *azidentity.AuthenticationFailedError
	if errors.As(err, &ae) {
		return fmt.Errorf("%w: %w", fs.ErrPermission, err)
	}
	return err
}

// isFolder reports an ADLS Gen2 directory as the Blob API shows it.
func isFolder(md map[string]*string) bool {
	for k, v := range md {
		if strings.EqualFold(k, "hdi_isfolder") && v != nil && strings.EqualFold(*v, "true") {
			return true
		}
	}
	return false
}

func azEntry(r string, it *container.BlobItem) Entry {
	e := Entry{Path: r}
	if p := it.Properties; p != nil {
		if p.ContentLength != nil {
			e.Size = *p.ContentLength
		}
		if p.LastModified != nil {
			e.ModTime = *p.LastModified
		}
	}
	return e
}

// List implements Store.
func (s *Azure) List(ctx context.Context, dir string) ([]Entry, error) {
	c, k, err := s.key(OpList, dir, true)
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	seen := map[string]bool{}
	lp := dirPrefix(k)
	pager := s.client.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{
		Prefix:  &lp,
		Include: container.ListBlobsInclude{Metadata: true},
	})
	for pager.More() {
		page, err := pager.NextPage(withAnswerDeadline(ctx, s.timeout))
		if err != nil {
			return nil, pathErr(OpList, s.uri, c, s.err(err))
		}
		for _, bp := range page.Segment.BlobPrefixes {
			if bp.Name == nil {
				continue
			}
			if r, ok := keyRel(s.prefix, strings.TrimSuffix(*bp.Name, "/")); ok && !seen[r] {
				seen[r] = true
				out = append(out, Entry{Path: r, IsDir: true})
			}
		}
		for _, it := range page.Segment.BlobItems {
			if it.Name == nil {
				continue
			}
			r, ok := keyRel(s.prefix, *it.Name)
			if !ok {
				continue
			}
			if isFolder(it.Metadata) {
				// A hierarchical-namespace directory: also a prefix when it has children.
				if !seen[r] {
					seen[r] = true
					out = append(out, Entry{Path: r, IsDir: true})
				}
				continue
			}
			out = append(out, azEntry(r, it))
		}
	}
	sortEntries(out)
	return out, nil
}

// Walk implements Store.
func (s *Azure) Walk(ctx context.Context, dir string) ([]Entry, error) {
	c, k, err := s.key(OpWalk, dir, true)
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	lp := dirPrefix(k)
	pager := s.client.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{
		Prefix:  &lp,
		Include: container.ListBlobsInclude{Metadata: true},
	})
	for pager.More() {
		page, err := pager.NextPage(withAnswerDeadline(ctx, s.timeout))
		if err != nil {
			return nil, pathErr(OpWalk, s.uri, c, s.err(err))
		}
		for _, it := range page.Segment.BlobItems {
			if it.Name == nil || strings.HasSuffix(*it.Name, "/") || isFolder(it.Metadata) {
				continue // directory markers and hierarchical-namespace directories
			}
			if r, ok := keyRel(s.prefix, *it.Name); ok {
				out = append(out, azEntry(r, it))
			}
		}
	}
	sortEntries(out)
	return out, nil
}

// Stat implements Store: the blob's properties (a hierarchical-namespace directory is a blob
// too), then, for a missing blob, a one-name listing to tell a directory from nothing.
func (s *Azure) Stat(ctx context.Context, path string) (Entry, error) {
	c, k, err := s.key(OpStat, path, true)
	if err != nil {
		return Entry{}, err
	}
	if c != "" {
		p, err := s.client.NewBlobClient(k).GetProperties(withAnswerDeadline(ctx, s.timeout), nil)
		if err == nil {
			if isFolder(p.Metadata) {
				return Entry{Path: c, IsDir: true}, nil
			}
			e := Entry{Path: c}
			if p.ContentLength != nil {
				e.Size = *p.ContentLength
			}
			if p.LastModified != nil {
				e.ModTime = *p.LastModified
			}
			return e, nil
		}
		if err = s.err(err); !errors.Is(err, fs.ErrNotExist) {
			return Entry{}, pathErr(OpStat, s.uri, c, err)
		}
	}
	lp := dirPrefix(k)
	one := int32(1)
	page, err := s.client.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &lp, MaxResults: &one}).NextPage(withAnswerDeadline(ctx, s.timeout))
	if err != nil {
		return Entry{}, pathErr(OpStat, s.uri, c, s.err(err))
	}
	if len(page.Segment.BlobItems) > 0 || lp == "" {
		return Entry{Path: c, IsDir: true}, nil
	}
	return Entry{}, pathErr(OpStat, s.uri, c, fs.ErrNotExist)
}

func (s *Azure) get(ctx context.Context, op Op, path string) (string, io.ReadCloser, error) {
	c, k, err := s.key(op, path, false)
	if err != nil {
		return "", nil, err
	}
	resp, err := s.client.NewBlobClient(k).DownloadStream(withAnswerDeadline(ctx, s.timeout), nil)
	if err != nil {
		return "", nil, pathErr(op, s.uri, c, s.err(err))
	}
	if isFolder(resp.Metadata) {
		resp.Body.Close()
		return "", nil, pathErr(op, s.uri, c, fs.ErrNotExist)
	}
	return c, resp.Body, nil
}

// ReadFile implements Store.
func (s *Azure) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return readWhole(ctx, s.uri, path, s.get, s.err)
}

// Open implements Store; the reader is the download's body.
func (s *Azure) Open(ctx context.Context, path string) (io.ReadCloser, error) {
	return openStream(ctx, s.uri, path, s.get, s.err)
}

// WriteFile implements Store (see the type's doc).
func (s *Azure) WriteFile(ctx context.Context, path string, data []byte) error {
	return s.Create(ctx, path, BytesSource(data))
}

// AzureMaxPut is the largest blob one Put Blob may create (5000 MiB); ckpt does not stage
// blocks, so Create refuses larger files.
const AzureMaxPut = 5000 << 20

// Create implements Store: WriteFile's Put Blob with the body streamed from src. The SDK's
// retries rewind the body, which opens src again.
func (s *Azure) Create(ctx context.Context, path string, src Source) error {
	c, k, err := s.key(OpWrite, path, false)
	if err != nil {
		return err
	}
	if src.Size > AzureMaxPut {
		return pathErr(OpWrite, s.uri, c, fmt.Errorf("a file of %d bytes is larger than one Azure Put Blob takes (5000 MiB), and ckpt does not stage blocks", src.Size))
	}
	ctx = withAnswerDeadline(ctx, s.timeout)
	body := newRewinder(ctx, src)
	defer body.Close()
	etagAny := azcore.ETagAny
	_, err = s.client.NewBlockBlobClient(k).Upload(ctx, body, &blockblob.UploadOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &etagAny}},
	})
	if err != nil {
		var re *azcore.ResponseError
		if bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ConditionNotMet) ||
			(errors.As(err, &re) && re.StatusCode == http.StatusPreconditionFailed) {
			return pathErr(OpWrite, s.uri, c, fs.ErrExist)
		}
		return pathErr(OpWrite, s.uri, c, s.err(err))
	}
	return nil
}

// Delete implements Store. A missing blob is not an error.
func (s *Azure) Delete(ctx context.Context, path string) error {
	c, k, err := s.key(OpDelete, path, false)
	if err != nil {
		return err
	}
	if _, err := s.client.NewBlobClient(k).Delete(withAnswerDeadline(ctx, s.timeout), nil); err != nil {
		if err = s.err(err); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return pathErr(OpDelete, s.uri, c, err)
	}
	return nil
}
