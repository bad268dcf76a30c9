package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Linear is a large local checkpoint for benchmarks: offsets 0..Batches-1, each one Kafka
// source "events" of 3 partitions (Kafka), and commits 0..Committed-1. Files are written
// directly (no atomic rename, no fsync): only their listing matters.
type Linear struct {
	Name      string // the Builder name, which fixes the query id
	Batches   int64
	Committed int64
	Initial   bool // write sources/0/0, the Kafka initial offsets (0, 0, 0)
}

// WriteLinear writes l into dir.
func WriteLinear(dir string, l Linear) error {
	sb := NewBuilder(l.Name)
	for _, d := range []string{"offsets", "commits", "sources/0"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	write := func(rel, data string) error {
		return os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), []byte(data), 0o644)
	}
	if err := write("metadata", `{"id":"`+sb.QueryID()+`"}`); err != nil {
		return err
	}
	if l.Initial {
		if err := write("sources/0/0", "\x00v1\n"+KafkaOffsets("events", 0, 0, 0)); err != nil {
			return err
		}
	}
	for id := int64(0); id < l.Batches; id++ {
		if err := write(fmt.Sprintf("offsets/%d", id), sb.OffsetsJSON(id, Kafka("events", id, 3))); err != nil {
			return err
		}
		if id >= l.Committed {
			continue
		}
		if err := write(fmt.Sprintf("commits/%d", id), "v1\n{\"nextBatchWatermarkMs\":0}"); err != nil {
			return err
		}
	}
	return nil
}

// BenchCheckpoint generates a Linear checkpoint once per test binary, in a temporary
// directory, or, when Reuse is set and CKPT_BENCH_DIR names a directory, there, kept across
// runs (generated only if its last offsets file is missing).
type BenchCheckpoint struct {
	Linear
	Prefix string // the temporary directory's name pattern (os.MkdirTemp)
	Reuse  bool   // honour CKPT_BENCH_DIR

	once sync.Once
	dir  string
	keep bool
	err  error
}

// Dir generates the checkpoint on first use and returns its directory.
func (c *BenchCheckpoint) Dir() (string, error) {
	c.once.Do(func() {
		if d := os.Getenv("CKPT_BENCH_DIR"); c.Reuse && d != "" {
			c.dir, c.keep = d, true
			if _, err := os.Stat(filepath.Join(d, "offsets", fmt.Sprint(c.Batches-1))); err == nil {
				return
			}
		} else if c.dir, c.err = os.MkdirTemp("", c.Prefix); c.err != nil {
			return
		}
		c.err = WriteLinear(c.dir, c.Linear)
	})
	return c.dir, c.err
}

// Remove deletes a generated temporary directory (not a kept CKPT_BENCH_DIR); for TestMain.
func (c *BenchCheckpoint) Remove() {
	if c.dir != "" && !c.keep {
		_ = os.RemoveAll(c.dir)
	}
}
