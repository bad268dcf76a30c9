package repartition

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/statefmt"
)

// bigStateBytes is the size of the benchmark's state on disk: two snapshots of half of it.
var bigStateBytes int64 = 1 << 30

// bigCheckpoint is the 4.2.0 agg-hdfs fixture whose partitions 0 and 1 hold, as version 5, a
// snapshot of about bigStateBytes/2 of lz4 each: small rows (a random 16-hex-digit key and an
// int; the fixture's first value), kept in CKPT_BENCH_DIR between runs.
func bigCheckpoint(b *testing.B) (string, int64) {
	b.Helper()
	if v, err := strconv.ParseInt(os.Getenv("CKPT_BENCH_STATE_BYTES"), 10, 64); err == nil && v > 0 {
		bigStateBytes = v
	}
	base := os.Getenv("CKPT_BENCH_DIR")
	if base == "" {
		base = b.TempDir()
	}
	dir := filepath.Join(base, fmt.Sprintf("repartition-%d", bigStateBytes), "ck")
	done := filepath.Join(dir, "..", "rows")
	if data, err := os.ReadFile(done); err == nil {
		n, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		return dir, n
	}
	_ = os.RemoveAll(filepath.Dir(dir))
	if err := os.CopyFS(dir, os.DirFS(fixture)); err != nil {
		b.Fatal(err)
	}
	snap := filepath.Join(fixture, "state/0/0/3.snapshot")
	data, _ := os.ReadFile(snap)
	dr, err := statefmt.Decompress(snap, statefmt.CodecLZ4, bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	rec, err := statefmt.NewRecordReader(snap, statefmt.Snapshot, dr).Next()
	if err != nil {
		b.Fatal(err)
	}
	value := bytes.Clone(rec.Value)
	keyType := &statefmt.Type{Name: "struct", Fields: []statefmt.Field{{Name: "k", Type: &statefmt.Type{Name: "string"}}, {Name: "b", Type: &statefmt.Type{Name: "integer"}}}}
	rng := rand.New(rand.NewPCG(1, 2))
	var rows int64
	for part := range 2 {
		f, err := os.Create(filepath.Join(dir, "state/0", strconv.Itoa(part), "5.snapshot"))
		if err != nil {
			b.Fatal(err)
		}
		bw := bufio.NewWriterSize(f, 1<<20)
		cw := &countingWriter{w: bw}
		fw, err := statefmt.NewFileWriter(statefmt.CodecLZ4, cw)
		if err != nil {
			b.Fatal(err)
		}
		var k [8]byte
		for cw.n < bigStateBytes/2 {
			for i := range k {
				k[i] = byte(rng.Uint32())
			}
			key, err := statefmt.EncodeRow(&statefmt.Object{Names: []string{"k", "b"}, Values: []any{hex.EncodeToString(k[:]), int32(rows % 7)}}, keyType)
			if err != nil {
				b.Fatal(err)
			}
			if err := fw.Put(key, value); err != nil {
				b.Fatal(err)
			}
			rows++
		}
		if err := fw.Close(); err != nil {
			b.Fatal(err)
		}
		if err := bw.Flush(); err != nil {
			b.Fatal(err)
		}
		_ = f.Close()
	}
	if err := os.WriteFile(done, []byte(strconv.FormatInt(rows, 10)), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir, rows
}

type countingWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.w.Write(p)
}

// timed is one run of the ckpt binary under /usr/bin/time.
type timed struct {
	wall, cpu float64 // seconds
	maxRSS    int64   // KiB
	stdout    []byte
}

func runTimed(b *testing.B, bin string, args ...string) timed {
	b.Helper()
	tf := filepath.Join(b.TempDir(), "time")
	cmd := exec.Command("/usr/bin/time", append([]string{"-o", tf, "-f", "%e %U %S %M", bin}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if args[1] == "read" {
		// Gigabytes of JSON lines: straight to /dev/null, no copy through this process.
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer null.Close()
		cmd.Stdout = null
	}
	if err := cmd.Run(); err != nil {
		b.Fatalf("ckpt %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	data, err := os.ReadFile(tf)
	if err != nil {
		b.Fatal(err)
	}
	var t timed
	var user, sys float64
	if _, err := fmt.Sscanf(string(data), "%g %g %g %d", &t.wall, &user, &sys, &t.maxRSS); err != nil {
		b.Fatalf("/usr/bin/time said %q: %v", data, err)
	}
	t.cpu = user + sys
	t.stdout = out.Bytes()
	return t
}

// BenchmarkRepartitionVsRead runs the ckpt binary (CKPT_BENCH_BIN, or built here) on about
// 1 GB of HDFS-backed state (CKPT_BENCH_STATE_BYTES): `state read -o json` of every row, then
// `state repartition --execute` 2→4, a read of the 4 partitions, 4→2, and the undo of both
// (so that every iteration starts from the same files), each under /usr/bin/time: peak RSS,
// wall and CPU time, and the repartition's speed as a fraction of the read's over the same
// state in the same run.
func BenchmarkRepartitionVsRead(b *testing.B) {
	bin := benchBinary(b)
	dir, rows := bigCheckpoint(b)
	benchRepartitionVsRead(b, bin, dir, rows)
}

// BenchmarkRepartitionRocksDBVsRead is BenchmarkRepartitionVsRead on about 1 GB of RocksDB
// state (CKPT_BENCH_STATE_BYTES of SST files): Spark 4.2.0's agg-rocksdb fixture whose
// partitions 0 and 1 hold, as version 5, one SST file of half of it each (ckpt's writer; the
// fixture's value, random keys), kept in CKPT_BENCH_DIR between runs.
func BenchmarkRepartitionRocksDBVsRead(b *testing.B) {
	bin := benchBinary(b)
	dir, rows := bigRocksCheckpoint(b)
	benchRepartitionVsRead(b, bin, dir, rows)
}

// bigRocksCheckpoint is the RocksDB state of BenchmarkRepartitionRocksDBVsRead, written once
// into CKPT_BENCH_DIR.
func bigRocksCheckpoint(b *testing.B) (string, int64) {
	if v, err := strconv.ParseInt(os.Getenv("CKPT_BENCH_STATE_BYTES"), 10, 64); err == nil && v > 0 {
		bigStateBytes = v
	}
	base := os.Getenv("CKPT_BENCH_DIR")
	if base == "" {
		base = b.TempDir()
	}
	dir := filepath.Join(base, fmt.Sprintf("repartition-rocksdb-%d", bigStateBytes), "ck")
	done := filepath.Join(dir, "..", "rows")
	if data, err := os.ReadFile(done); err == nil {
		rows, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		return dir, rows
	}
	_ = os.RemoveAll(filepath.Dir(dir))
	rows := writeRocksState(b, dir, bigStateBytes/2, 0, false)
	if err := os.WriteFile(done, []byte(strconv.FormatInt(rows, 10)), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir, rows
}

func benchBinary(b *testing.B) string {
	bin := os.Getenv("CKPT_BENCH_BIN")
	if bin == "" {
		bin = filepath.Join(b.TempDir(), "ckpt")
		if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/ckpt").CombinedOutput(); err != nil {
			b.Fatalf("build: %v\n%s", err, out)
		}
	}
	return bin
}

// loadAvg is the load average (1, 5 and 15 minutes).
func loadAvg() string {
	data, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(data))[:3], " ")
}

func benchRepartitionVsRead(b *testing.B, bin, dir string, rows int64) {
	var size int64
	_ = filepath.Walk(filepath.Join(dir, "state"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			size += fi.Size()
		}
		return nil
	})
	b.Logf("state: %d rows, %d MB in state/ (%s)", rows, size>>20, dir)
	b.ResetTimer()
	for range b.N {
		var journals []string
		for _, n := range []int{4, 2} {
			l0 := loadAvg()
			rd := runTimed(b, bin, "state", "read", dir, "--operator", "0", "-o", "json")
			rp := runTimed(b, bin, "state", "repartition", dir, "--partitions", strconv.Itoa(n), "--execute", "--yes", "--active-window", "0", "-o", "json", "--quiet")
			var doc struct {
				Rows    int64  `json:"rows"`
				Journal string `json:"journal"`
			}
			if err := json.Unmarshal(rp.stdout, &doc); err != nil || doc.Rows != rows {
				b.Fatalf("repartition: %d rows of %d (%v)\n%s", doc.Rows, rows, err, rp.stdout)
			}
			journals = append(journals, doc.Journal)
			b.Logf("to %d (load %s → %s): read %.1f s wall %.1f s cpu %d MB; repartition %.1f s wall %.1f s cpu %d MB; speed %.2f of read's (wall), %.2f (cpu)",
				n, l0, loadAvg(), rd.wall, rd.cpu, rd.maxRSS>>10, rp.wall, rp.cpu, rp.maxRSS>>10, rd.wall/rp.wall, rd.cpu/rp.cpu)
		}
		for i := len(journals) - 1; i >= 0; i-- {
			if out, err := exec.Command(bin, "repair", "undo", journals[i], "--yes", "--active-window", "0").CombinedOutput(); err != nil {
				b.Fatalf("undo: %v\n%s", err, out)
			}
		}
	}
}

// BenchmarkEditVsRead runs the ckpt binary's `state edit --execute` on the same 1 GB of state
// as the repartition benchmarks (CKPT_BENCH_EDIT=hdfs or rocksdb, default hdfs): `--where` that
// drops the keys below "01" (about 1/256 of the rows) and `--operator 0 --drop-operator`, each
// after a `state read -o json` of every row and undone after, under /usr/bin/time.
func BenchmarkEditVsRead(b *testing.B) {
	bin := benchBinary(b)
	var dir string
	var rows int64
	if os.Getenv("CKPT_BENCH_EDIT") == "rocksdb" {
		dir, rows = bigRocksCheckpoint(b)
	} else {
		dir, rows = bigCheckpoint(b)
	}
	b.Logf("state: %d rows (%s)", rows, dir)
	b.ResetTimer()
	for range b.N {
		for _, edit := range [][]string{{"--where", `key.k < "01"`}, {"--operator", "0", "--drop-operator"}} {
			l0 := loadAvg()
			rd := runTimed(b, bin, "state", "read", dir, "--operator", "0", "-o", "json")
			args := append([]string{"state", "edit", dir}, edit...)
			ed := runTimed(b, bin, append(args, "--execute", "--yes", "--active-window", "0", "-o", "json", "--quiet")...)
			var doc struct {
				Rows    int64  `json:"rows"`
				Dropped int64  `json:"dropped"`
				Journal string `json:"journal"`
			}
			if err := json.Unmarshal(ed.stdout, &doc); err != nil || doc.Rows != rows {
				b.Fatalf("edit: %d rows of %d (%v)\n%s", doc.Rows, rows, err, ed.stdout)
			}
			b.Logf("%s (load %s → %s): read %.1f s wall %.1f s cpu %d MB; edit (%d dropped) %.1f s wall %.1f s cpu %d MB; speed %.2f of read's (wall), %.2f (cpu)",
				strings.Join(edit, " "), l0, loadAvg(), rd.wall, rd.cpu, rd.maxRSS>>10, doc.Dropped, ed.wall, ed.cpu, ed.maxRSS>>10, rd.wall/ed.wall, rd.cpu/ed.cpu)
			if out, err := exec.Command(bin, "repair", "undo", doc.Journal, "--yes", "--active-window", "0").CombinedOutput(); err != nil {
				b.Fatalf("undo: %v\n%s", err, out)
			}
		}
	}
}
