package doctor

import (
	"context"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// The output directory of a sink on GCS, Azure or HDFS is spelled as Spark spells the sink's
// file paths there, so entries outside it can be told.
func TestSinkOutputDirRemoteStores(t *testing.T) {
	hd, err := storage.Open(context.Background(), "hdfs://nn:8020/data/out/_spark_metadata", storage.Options{WebHDFSEndpoint: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		st     storage.Store
		logDir string
		want   string
	}{
		{storage.NewGCSAt(storage.GCSEndpoint, nil, "bucket", "out/_spark_metadata"), "", "gs://bucket/out"},
		{storage.NewGCSAt(storage.GCSEndpoint, nil, "bucket", "out"), sinklog.Dir, "gs://bucket/out"},
		{hd, "", "hdfs://nn:8020/data/out"},
	} {
		got, ok := sinkOutputDir(c.st, c.logDir)
		if !ok || got.String() != c.want {
			t.Errorf("sinkOutputDir(%s) = %v %v, want %s", c.st.URI(), got, ok, c.want)
		}
		in, _ := parseSinkPath(c.want + "/part-0.parquet")
		if !in.under(got) {
			t.Errorf("%s/part-0.parquet is not under %v", c.want, got)
		}
	}
}
