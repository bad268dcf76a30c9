package logformat

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestHadoopChecksumSparkFiles: the checksum of every file Spark 4.2.0 wrote in a fixture is
// the .crc Hadoop wrote next to it.
func TestHadoopChecksumSparkFiles(t *testing.T) {
	root := "../../testdata/spark-state/4.2.0/agg-hdfs/checkpoint"
	n := 0
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || filepath.Ext(p) == ".crc" {
			return err
		}
		want, err := os.ReadFile(filepath.Join(filepath.Dir(p), "."+fi.Name()+".crc"))
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if got := HadoopChecksum(data); !bytes.Equal(got, want) {
			t.Errorf("%s: checksum %x, Hadoop wrote %x", p, got, want)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("only %d files with a .crc under %s", n, root)
	}
}
