package storetest

import (
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// HDFSHint is the message tests give when no HDFS is configured.
const HDFSHint = `HDFS tests need a mini-cluster: run eval "$(.ci/hdfs.sh start)"`

// HDFSEnv returns the test cluster's WebHDFS endpoint, CKPT_TEST_WEBHDFS_ENDPOINT (e.g.
// http://127.0.0.1:9870). When it is unset the test fails if CI is set and is skipped
// otherwise, with HDFSHint either way.
func HDFSEnv(t testing.TB) string {
	t.Helper()
	return need(t, "CKPT_TEST_WEBHDFS_ENDPOINT", HDFSHint)
}

// HDFS returns a store on a fresh directory /ckpt-test-<random>/root-<random> of the test
// cluster, so that files outside the root exist only if the store wrote them there. The
// cluster is the test's own (.ci/hdfs.sh): directories are left behind.
func HDFS(t testing.TB) *storage.HDFS {
	t.Helper()
	s, err := storage.NewHDFS(HDFSEnv(t), "/"+RandomName("ckpt-test-")+"/"+RandomName("root-"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
