package storage_test

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

func TestHDFS(t *testing.T) {
	storetest.HDFSEnv(t) // skip (or fail in CI) once, not per subtest
	storetest.RunStoreTests(t, func(t *testing.T) storage.Store { return storetest.HDFS(t) })
}

// TestHDFSOpen goes through Open as the CLI does: hdfs://namenode:port/path with the WebHDFS
// endpoint from CKPT_WEBHDFS_ENDPOINT, and webhdfs://host:port/path naming it, reach the same
// files.
func TestHDFSOpen(t *testing.T) {
	endpoint := storetest.HDFSEnv(t)
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	dir := "/" + storetest.RandomName("ckpt-test-") + "/deep"
	t.Setenv("CKPT_WEBHDFS_ENDPOINT", endpoint)
	ctx := context.Background()
	uri := "hdfs://namenode.invalid:8020" + dir + "/"
	st, err := storage.Open(ctx, uri, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := st.(*storage.HDFS); !ok || h.URI() != uri || h.Root() != dir || h.Endpoint() != endpoint {
		t.Fatalf("Open(%q) = %T %+v", uri, st, st)
	}
	if err := st.WriteFile(ctx, "offsets/0", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CKPT_WEBHDFS_ENDPOINT", "")
	st2, err := storage.Open(ctx, "webhdfs://"+u.Host+dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := st2.ReadFile(ctx, "offsets/0"); err != nil || string(b) != "v1" {
		t.Fatalf("through webhdfs://: %q, %v", b, err)
	}
	if err := st2.WriteFile(ctx, "offsets/0", []byte("v2")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second write = %v, want fs.ErrExist", err)
	}
	// Options over the environment; the default is the NameNode host on 9870.
	st3, err := storage.Open(ctx, "hdfs://namenode.invalid:8020/x", storage.Options{WebHDFSEndpoint: endpoint})
	if err != nil || st3.(*storage.HDFS).Endpoint() != endpoint {
		t.Fatalf("Options.WebHDFSEndpoint: %v", err)
	}
	st4, err := storage.Open(ctx, "hdfs://nn.example:8020/x", storage.Options{})
	if err != nil || st4.(*storage.HDFS).Endpoint() != "http://nn.example:9870" {
		t.Fatalf("default endpoint: %+v, %v", st4, err)
	}
	if _, err := storage.Open(ctx, "hdfs://nn:8020/x", storage.Options{WebHDFSEndpoint: "nn:9870"}); err == nil || !strings.Contains(err.Error(), "needs a scheme") {
		t.Fatalf("endpoint without a scheme: %v", err)
	}
}

// TestHDFSRenameRefusesOverwrite: the rename that publishes a write refuses an existing target
// by itself (rename options NONE), as in a race between the existence check and the rename;
// the loser's temp file is removed.
func TestHDFSRenameRefusesOverwrite(t *testing.T) {
	st := storetest.HDFS(t)
	ctx := context.Background()
	if err := st.WriteFile(ctx, "commits/3", []byte("first")); err != nil {
		t.Fatal(err)
	}
	err := storage.HDFSPublishForTest(ctx, st, "commits/3", []byte("second"))
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "commits/3") {
		t.Fatalf("publish over an existing file = %v, want fs.ErrExist naming the path", err)
	}
	if b, err := st.ReadFile(ctx, "commits/3"); err != nil || string(b) != "first" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	es, err := st.List(ctx, "commits")
	if err != nil || len(es) != 1 {
		t.Fatalf("List(commits) = %+v, %v: want only commits/3, no temp file", es, err)
	}
}

// TestHDFSEmptyDirectories: HDFS directories are real, so an empty one is listed and stat'ed
// as a directory, as on local disk.
func TestHDFSEmptyDirectories(t *testing.T) {
	st := storetest.HDFS(t)
	ctx := context.Background()
	if err := st.WriteFile(ctx, "d/f", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "d/f"); err != nil {
		t.Fatal(err)
	}
	es, err := st.List(ctx, "")
	if err != nil || len(es) != 1 || es[0].Path != "d" || !es[0].IsDir {
		t.Fatalf("List = %+v, %v", es, err)
	}
	if e, err := st.Stat(ctx, "d"); err != nil || !e.IsDir {
		t.Fatalf("Stat(d) = %+v, %v", e, err)
	}
	if es, err := st.Walk(ctx, ""); err != nil || len(es) != 0 {
		t.Fatalf("Walk = %+v, %v", es, err)
	}
}
