package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Linear is a large local checkpoint for benchmarks: offsets 0..Batches-1, each one Kafka
// source "events" of 3 partitions (Kafka), and commits 0..Committed-1. Files are written
// directly (no atomic rename, no fsync): only their listing matters.
type Linear struct {
	Name      string // the Builder name, which fixes the query id
	Batches   int64
	Committed int64
	Initial   bool // write sources/0/0, the Kafka initial offsets (0, 0, 0)
	// Linked writes each directory's batch files as hard links of the newest one, so a
	// million-batch tree costs one inode per directory and is generated in seconds. Every
	// offsets file then has the newest batch's contents; listings and the planner, which reads
	// only the newest files, see no difference.
	Linked bool
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
	if l.Linked {
		return writeLinked(dir, sb, l)
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
// directory, or, when Reuse is set and CKPT_BENCH_DIR names a directory, in its sub-directory
// named Name, kept across runs (generated only if its last offsets file is missing).
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
			c.dir, c.keep = filepath.Join(d, c.Name), true
			if _, err := os.Stat(filepath.Join(c.dir, "offsets", fmt.Sprint(c.Batches-1))); err == nil {
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

const linksPerFile = 60_000

func writeLinked(dir string, sb *Builder, l Linear) error {
	type log struct {
		dir  string
		n    int64
		data string
	}
	last := l.Batches - 1
	for _, lg := range []log{
		{"offsets", l.Batches, sb.OffsetsJSON(last, Kafka("events", last, 3))},
		{"commits", l.Committed, "v1\n{\"nextBatchWatermarkMs\":0}"},
	} {
		if lg.n == 0 {
			continue
		}
		tmpl := filepath.Join(dir, lg.dir, fmt.Sprint(lg.n-1))
		if err := os.WriteFile(tmpl, []byte(lg.data), 0o644); err != nil {
			return err
		}
		for id := int64(0); id < lg.n-1; id++ {
			p := filepath.Join(dir, lg.dir, fmt.Sprint(id))
			if id%linksPerFile == 0 {
				// ext4 allows 65,000 links to one inode: start a new one.
				tmpl = p
				if err := os.WriteFile(p, []byte(lg.data), 0o644); err != nil {
					return err
				}
				continue
			}
			if err := os.Link(tmpl, p); err != nil && !os.IsExist(err) {
				return err
			}
		}
	}
	return nil
}

// ReadDirNames is the floor the listing benchmarks compare against, what `ls -f` of a
// checkpoint's root, offsets/ and commits/ does: read each directory's names, unsorted, with no
// stat. It returns the number of names.
func ReadDirNames(dir string) (int, error) {
	n := 0
	for _, d := range []string{"", "offsets", "commits"} {
		f, err := os.Open(filepath.Join(dir, d))
		if err != nil {
			return 0, err
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return 0, err
		}
		n += len(names)
	}
	return n, nil
}

// RatioTimer alternates a bare operation and the operation under test inside one benchmark
// loop, so both see the same machine load, and reports their ratio: "x-floor" is the sum of
// the tested times over the sum of the floor times, "x-floor-median" the median of the
// per-iteration ratios, and floor-ms/op-ms the mean times.
type RatioTimer struct {
	floor, op []time.Duration
}

// Floor times one run of the bare operation.
func (r *RatioTimer) Floor(f func() error) error {
	t := time.Now()
	err := f()
	r.floor = append(r.floor, time.Since(t))
	return err
}

// Op times one run of the operation under test.
func (r *RatioTimer) Op(f func() error) error {
	t := time.Now()
	err := f()
	r.op = append(r.op, time.Since(t))
	return err
}

// Report adds the metrics to b (a *testing.B, kept as an interface so this package does not
// import testing).
func (r *RatioTimer) Report(b interface{ ReportMetric(float64, string) }) {
	if len(r.floor) == 0 || len(r.floor) != len(r.op) {
		return
	}
	var sf, so time.Duration
	ratios := make([]float64, len(r.floor))
	for i := range r.floor {
		sf += r.floor[i]
		so += r.op[i]
		ratios[i] = float64(r.op[i]) / float64(r.floor[i])
	}
	slices.Sort(ratios)
	n := float64(len(r.floor))
	b.ReportMetric(float64(so)/float64(sf), "x-floor")
	b.ReportMetric(ratios[len(ratios)/2], "x-floor-median")
	b.ReportMetric(float64(sf.Milliseconds())/n, "floor-ms")
	b.ReportMetric(float64(so.Milliseconds())/n, "op-ms")
}

// EnvInt is the positive number in environment variable name (a benchmark's size), def when it
// is unset, an error naming the variable otherwise.
func EnvInt(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a positive number", name, v)
	}
	return n, nil
}
