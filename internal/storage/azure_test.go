package storage_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

func TestAzure(t *testing.T) {
	storetest.AzureEnv(t) // skip (or fail in CI) once, not per subtest
	storetest.RunStoreTests(t, func(t *testing.T) storage.Store { return storetest.Azure(t) })
}

// TestAzureContainerRoot covers a store on a whole container (no prefix).
func TestAzureContainerRoot(t *testing.T) {
	storetest.AzureEnv(t)
	storetest.RunStoreTests(t, func(t *testing.T) storage.Store {
		return storage.NewAzureFromClient(storetest.AzureContainer(t), "")
	})
}

func TestParseAzureURI(t *testing.T) {
	good := map[string]storage.AzureLocation{
		"abfss://fs@acct.dfs.core.windows.net/ckpt/q1": {Container: "fs", Account: "acct", BlobURL: "https://acct.blob.core.windows.net/fs", Prefix: "ckpt/q1"},
		"wasbs://c@acct.blob.core.windows.net/":        {Container: "c", Account: "acct", BlobURL: "https://acct.blob.core.windows.net/c"},
		"abfs://c@acct.dfs.core.windows.net":           {Container: "c", Account: "acct", BlobURL: "https://acct.blob.core.windows.net/c"},
		"WASB://c@acct.blob.core.chinacloudapi.cn/x/":  {Container: "c", Account: "acct", BlobURL: "https://acct.blob.core.chinacloudapi.cn/c", Prefix: "x"},
	}
	for uri, want := range good {
		got, err := storage.ParseAzureURI(uri)
		if err != nil || got != want {
			t.Errorf("ParseAzureURI(%q) = %+v, %v; want %+v", uri, got, err, want)
		}
	}
	for _, uri := range []string{"abfss://acct.dfs.core.windows.net/x", "abfss://@acct.dfs.core.windows.net/x", "abfss://c@acct/x",
		"abfss://c@acct.file.core.windows.net/x", "abfss:c@acct.dfs.core.windows.net/x", "abfss://c@acct.dfs.core.windows.net:443/x", "s3://b/x"} {
		if _, err := storage.ParseAzureURI(uri); err == nil || !strings.Contains(err.Error(), "want abfss://container@account.dfs.core.windows.net/path") {
			t.Errorf("ParseAzureURI(%q) = %v, want an error showing the forms", uri, err)
		}
	}
}

// isolateAzure keeps the developer's Azure environment out of a test.
func isolateAzure(t *testing.T) {
	for _, k := range []string{"AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_KEY"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// TestAzureOpenWithConnectionString goes through Open as the CLI does, for both an ADLS Gen2
// (abfss://, dfs host) and a Blob (wasbs://) location of the same container: both reach the
// same blobs through the connection string's endpoint.
func TestAzureOpenWithConnectionString(t *testing.T) {
	cs := storetest.AzureEnv(t)
	account := storetest.AzureAccount(t)
	client := storetest.AzureContainer(t)
	isolateAzure(t)
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", cs)
	name := client.URL()[strings.LastIndex(client.URL(), "/")+1:]
	ctx := context.Background()
	abfss := "abfss://" + name + "@" + account + ".dfs.core.windows.net/deep/prefix/"
	st, err := storage.Open(ctx, abfss, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := st.(*storage.Azure); !ok || a.URI() != abfss || a.Prefix() != "deep/prefix" {
		t.Fatalf("Open(%q) = %T %q", abfss, st, st.URI())
	}
	if err := st.WriteFile(ctx, "offsets/0", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	resp, err := client.NewBlobClient("deep/prefix/offsets/0").DownloadStream(ctx, nil)
	if err != nil {
		t.Fatalf("blob not at deep/prefix/offsets/0: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "v1" {
		t.Fatalf("blob body %q", b)
	}
	wasbs := "wasbs://" + name + "@" + account + ".blob.core.windows.net/deep/prefix"
	st2, err := storage.Open(ctx, wasbs, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := st2.ReadFile(ctx, "offsets/0"); err != nil || string(b) != "v1" {
		t.Fatalf("through wasbs: %q, %v", b, err)
	}
	if err := st2.WriteFile(ctx, "offsets/0", []byte("v2")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second write = %v, want fs.ErrExist", err)
	}
	// A connection string for another account is refused rather than used on the wrong one.
	_, err = storage.Open(ctx, "wasbs://"+name+"@other.blob.core.windows.net/x", storage.Options{})
	if err == nil || !strings.Contains(err.Error(), `names the account "other"`) {
		t.Fatalf("Open with another account's connection string = %v", err)
	}
}

// TestAzureConditionalPutRefusesOverwrite: the Put Blob itself carries If-None-Match: *, so a
// blob written behind the store's back is not replaced.
func TestAzureConditionalPutRefusesOverwrite(t *testing.T) {
	client := storetest.AzureContainer(t)
	ctx := context.Background()
	if _, err := client.NewBlockBlobClient("ck/commits/3").UploadBuffer(ctx, []byte("first"), nil); err != nil {
		t.Fatal(err)
	}
	st := storage.NewAzureFromClient(client, "ck")
	err := st.WriteFile(ctx, "commits/3", []byte("second"))
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "write "+client.URL()+"/ck/commits/3") {
		t.Fatalf("WriteFile over an existing blob = %v, want fs.ErrExist naming the location", err)
	}
	if b, err := st.ReadFile(ctx, "commits/3"); err != nil || string(b) != "first" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
}

func TestAzureMissingContainer(t *testing.T) {
	client, err := container.NewClientFromConnectionString(storetest.AzureEnv(t), storetest.RandomName("nocontainer-"), nil)
	if err != nil {
		t.Fatal(err)
	}
	st := storage.NewAzureFromClient(client, "ck")
	_, err = st.List(context.Background(), "")
	if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "container does not exist") {
		t.Fatalf("List on a missing container = %v, want a container error that is not fs.ErrNotExist", err)
	}
}

// TestAzureHierarchicalDirectories: on an ADLS Gen2 account the Blob API shows each directory as
// a zero-length blob with hdi_isfolder=true (made here by hand, as Azurite has no hierarchical
// namespace). It is a directory to Stat and List, never a file to Walk or ReadFile; markers
// ending in "/" and names with "//" are not listed either.
func TestAzureHierarchicalDirectories(t *testing.T) {
	client := storetest.AzureContainer(t)
	ctx := context.Background()
	yes := "true"
	put := func(name, body string, folder bool) {
		t.Helper()
		o := &blockblob.UploadOptions{}
		if folder {
			o.Metadata = map[string]*string{"hdi_isfolder": &yes}
		}
		if _, err := client.NewBlockBlobClient(name).Upload(ctx, nopCloser{bytes.NewReader([]byte(body))}, o); err != nil {
			t.Fatalf("put %q: %v", name, err)
		}
	}
	put("ck", "", true)
	put("ck/offsets", "", true)
	put("ck/offsets/0", "1", false)
	put("ck/empty", "", true)
	put("ck/a/", "", false)
	put("ck//x", "1", false)
	put("ck2/offsets/9", "1", false)
	st := storage.NewAzureFromClient(client, "ck")
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
		s := e.Path
		if e.IsDir {
			s += "/"
		}
		got = append(got, s)
	}
	if strings.Join(got, ",") != "a/,empty/,offsets/" {
		t.Fatalf("List = %v", got)
	}
	for _, p := range []string{"empty", "offsets"} {
		if e, err := st.Stat(ctx, p); err != nil || !e.IsDir {
			t.Errorf("Stat(%q) = %+v, %v; want a directory", p, e, err)
		}
	}
	if _, err := st.ReadFile(ctx, "empty"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a directory = %v, want fs.ErrNotExist", err)
	}
}

type nopCloser struct{ io.ReadSeeker }

func (nopCloser) Close() error { return nil }
