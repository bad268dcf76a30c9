package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/kafka"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// BenchmarkKafkaToKafka compares a `ckpt run` Kafka→Kafka copy (trigger once, at-least-once
// sink, --select value) with kafka.PlainConsumeProduce on the same broker and data in the same
// run. Metrics: records/s of each and their ratio (goal ≥ 0.9 in every pair), median-ratio, the
// median of the iterations' ratios, min-ratio and pairs-under-0.9, and cpu-ratio, the ratio of
// the process's CPU time per side (not on Windows). Both producers are tuned alike
// (kafka.ProducerDefaults); each side's output is deleted after it ran, so that the broker's heap
// does not grow, garbage is collected before each side, both sides run once unmeasured first,
// and the sides alternate going first. With -v it logs every pair's ratios and each side's
// garbage collections; a -cpuprofile labels each side's samples (side=plain, side=eng).
// CKPT_BENCH_KAFKA_RECORDS sets the records per side (default 500,000): longer sides average out
// the machine's noise, which BenchmarkKafkaToKafkaPlainPair measures.
func BenchmarkKafkaToKafka(b *testing.B) { kafkaToKafka(b, false) }

// BenchmarkKafkaToKafkaPlainPair is BenchmarkKafkaToKafka with the plain copy on both sides (the
// "engine" side copies to the engine's output topic): the same work twice, so its pair ratios are
// the measurement's own spread on this machine, the floor under what the engine's pairs can show.
func BenchmarkKafkaToKafkaPlainPair(b *testing.B) { kafkaToKafka(b, true) }

func kafkaToKafka(b *testing.B, plainTwice bool) {
	var n int64 = 500_000
	if v := os.Getenv("CKPT_BENCH_KAFKA_RECORDS"); v != "" {
		var err error
		if n, err = strconv.ParseInt(v, 10, 64); err != nil || n < 1 {
			b.Fatalf("CKPT_BENCH_KAFKA_RECORDS=%q: want a positive number", v)
		}
	}
	ctx := context.Background()
	br := startBroker(b, embedkafka.TopicSpec{Name: "in", Partitions: 4}, embedkafka.TopicSpec{Name: "plain", Partitions: 4}, embedkafka.TopicSpec{Name: "eng", Partitions: 4})
	if err := kafka.FillTopic(ctx, br.Addr(), "in", n, 100); err != nil {
		b.Fatal(err)
	}
	q := kafkaQuery(br.Addr(), "subscribe=in")
	q.Trigger = "once"
	q.Sink = "kafka"
	q.SinkOptions = map[string]string{"kafka.bootstrap.servers": br.Addr(), "topic": "eng"}
	q.Select = []string{"value"}
	r := resolve(b, q)
	var plain, eng, plainCPU, engCPU time.Duration
	var lastCPU time.Duration // the CPU time of the side that ran last
	var lastGCs uint32        // the garbage collections during the side that ran last
	// Allocations (count and bytes) of the whole process per side: client, engine and the
	// in-process broker, as the CPU time.
	var plainAllocs, engAllocs, plainBytes, engBytes uint64
	var lastAllocs, lastBytes uint64
	timed := func(out string, cpu *time.Duration, f func() error) time.Duration {
		b.Helper()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		gc0, m0, b0 := ms.NumGC, ms.Mallocs, ms.TotalAlloc
		t0, c0 := time.Now(), processCPU()
		var err error
		// Labelled, so that a -cpuprofile tells the sides apart (-tagfocus side=eng): the
		// clients' goroutines inherit the label, the in-process broker's do not.
		pprof.Do(ctx, pprof.Labels("side", out), func(context.Context) { err = f() })
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		lastCPU = processCPU() - c0
		runtime.ReadMemStats(&ms)
		lastGCs = ms.NumGC - gc0
		lastAllocs, lastBytes = ms.Mallocs-m0, ms.TotalAlloc-b0
		*cpu += lastCPU
		for p := int32(0); p < 4; p++ { // drop the output: the broker's heap stays the same
			if err := br.Cluster().DeleteRecords(out, p, -1); err != nil {
				b.Fatal(err)
			}
		}
		return d
	}
	var lastPlain, lastEng, lastPlainCPU, lastEngCPU time.Duration
	var pairs []float64    // per-iteration ratios
	var cpuPairs []float64 // per-iteration ratios of CPU time, plain's over the engine's
	var outside []float64  // per engine run: ms outside the batch's read+sink (addBatch)
	var plainGCs, engGCs []uint32
	var plainMs, engMs []int64
	runPlain := func() {
		lastPlain = timed("plain", &plainCPU, func() error { return kafka.PlainConsumeProduce(ctx, br.Addr(), "in", "plain", n) })
		lastPlainCPU = lastCPU
		plainGCs = append(plainGCs, lastGCs)
		plainAllocs += lastAllocs
		plainBytes += lastBytes
		plainMs = append(plainMs, lastPlain.Milliseconds())
		plain += lastPlain
	}
	runEngine := func() {
		store := mustLocalB(b)
		var addBatch int64
		lastEng = timed("eng", &engCPU, func() error {
			if plainTwice {
				return kafka.PlainConsumeProduce(ctx, br.Addr(), "in", "eng", n)
			}
			e, err := New(ctx, Options{Query: r, Store: store, Log: io.Discard, OnProgress: func(p *Progress) { addBatch += p.DurationMs["addBatch"] }})
			if err != nil {
				return err
			}
			st, err := e.Run(ctx)
			if err != nil {
				return err
			}
			if st.Rows != n {
				return fmt.Errorf("engine read %d rows, want %d", st.Rows, n)
			}
			return nil
		})
		lastEngCPU = lastCPU
		engGCs = append(engGCs, lastGCs)
		engAllocs += lastAllocs
		engBytes += lastBytes
		engMs = append(engMs, lastEng.Milliseconds())
		eng += lastEng
		if !plainTwice {
			outside = append(outside, float64(lastEng.Milliseconds()-addBatch))
		}
	}
	// One unmeasured run of each side first: the first run after FillTopic is slower (the
	// broker's and the runtime's first use of the input, pools still empty), and it used to be
	// the plain side's, which made the first pair favour the engine by 1.4–2.5.
	runPlain()
	runEngine()
	plain, eng, plainCPU, engCPU = 0, 0, 0, 0
	plainAllocs, engAllocs, plainBytes, engBytes = 0, 0, 0, 0
	plainGCs, engGCs, plainMs, engMs, outside = nil, nil, nil, nil, nil
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			runPlain()
			runEngine()
		} else {
			runEngine()
			runPlain()
		}
		pairs = append(pairs, lastPlain.Seconds()/lastEng.Seconds())
		if lastEngCPU > 0 {
			cpuPairs = append(cpuPairs, lastPlainCPU.Seconds()/lastEngCPU.Seconds())
		}
	}
	pr := float64(n*int64(b.N)) / plain.Seconds()
	er := float64(n*int64(b.N)) / eng.Seconds()
	b.ReportMetric(pr, "plain-rec/s")
	b.ReportMetric(er, "engine-rec/s")
	b.ReportMetric(er/pr, "ratio")
	// The median of the iterations' ratios: a burst of load elsewhere on the machine during one
	// side of one iteration moves it less than the overall ratio.
	if testing.Verbose() {
		b.Logf("pair ratios, in run order: %.2f", pairs)
		b.Logf("pair CPU ratios, in run order: %.2f", cpuPairs)
		b.Logf("ms per side, in run order: plain %d, engine %d", plainMs, engMs)
		b.Logf("garbage collections per side, in run order: plain %d, engine %d", plainGCs, engGCs)
	}
	slices.Sort(pairs)
	b.ReportMetric(pairs[len(pairs)/2], "median-ratio")
	// The goal holds in every pair, not only in the median: the worst pair, and how many pairs
	// fell under 0.9.
	b.ReportMetric(pairs[0], "min-ratio")
	b.ReportMetric(float64(countUnder(pairs, 0.9)), "pairs-under-0.9")
	// Start (plan, metadata, clients), offsets and commit writes and shutdown: the engine's
	// fixed cost per run, which the plain loop does not have.
	if len(outside) > 0 {
		slices.Sort(outside)
		b.ReportMetric(outside[len(outside)/2], "engine-fixed-ms")
	}
	// Allocations per record of each side (the whole process, as -benchmem's, which adds both
	// sides up).
	recs := float64(n * int64(b.N))
	b.ReportMetric(float64(plainAllocs)/recs, "plain-allocs/rec")
	b.ReportMetric(float64(engAllocs)/recs, "engine-allocs/rec")
	b.ReportMetric(float64(plainBytes)/recs, "plain-B/rec")
	b.ReportMetric(float64(engBytes)/recs, "engine-B/rec")
	if engCPU > 0 {
		// CPU time of the whole process (client, engine and the in-process broker) per side:
		// plain's over the engine's, steadier than the wall-time ratio on a loaded machine.
		b.ReportMetric(plainCPU.Seconds()/engCPU.Seconds(), "cpu-ratio")
		// CPU per record and the worst pair by CPU: what the engine costs whatever else runs on
		// the machine (a loaded machine moves wall time, hardly the CPU a side uses).
		b.ReportMetric(float64(plainCPU.Nanoseconds())/float64(n*int64(b.N)), "plain-cpu-ns/rec")
		b.ReportMetric(float64(engCPU.Nanoseconds())/float64(n*int64(b.N)), "engine-cpu-ns/rec")
		slices.Sort(cpuPairs)
		b.ReportMetric(cpuPairs[0], "cpu-min-ratio")
		b.ReportMetric(float64(countUnder(cpuPairs, 0.9)), "cpu-pairs-under-0.9")
	}
}

// countUnder counts the ratios below goal.
func countUnder(ratios []float64, goal float64) int {
	n := 0
	for _, r := range ratios {
		if r < goal {
			n++
		}
	}
	return n
}

// tickSource has one new record per trigger on one partition: the engine's own cost per batch.
type tickSource struct{}

func (s *tickSource) Description() string            { return "tick" }
func (s *tickSource) PrepareForTriggerAvailableNow() {}
func (s *tickSource) Close()                         {}
func (s *tickSource) DefaultReadLimit() ReadLimit    { return ReadLimit{AllAvailable: true} }
func (s *tickSource) InitialOffsets(context.Context) (logformat.KafkaOffsets, error) {
	return logformat.NewKafkaOffsets(map[logformat.TopicPartition]int64{{Topic: "t", Partition: 0}: 0}), nil
}
func (s *tickSource) Latest(_ context.Context, start logformat.KafkaOffsets, _ ReadLimit) (logformat.KafkaOffsets, logformat.KafkaOffsets, []string, error) {
	o, _ := start.Get("t", 0)
	end := logformat.NewKafkaOffsets(map[logformat.TopicPartition]int64{{Topic: "t", Partition: 0}: o + 1})
	return end, end, nil, nil
}
func (s *tickSource) Read(_ context.Context, start, end logformat.KafkaOffsets, _ int, fn func(logformat.TopicPartition, []transform.Row) error) error {
	o, _ := start.Get("t", 0)
	return fn(logformat.TopicPartition{Topic: "t", Partition: 0}, []transform.Row{{Value: []byte("x"), Topic: "t", Offset: o}})
}

// BenchmarkBatchOverhead is the engine's per-batch cost with a local checkpoint and the noop
// sink: plan, offsets/N, read, sink, commits/N, progress. Reports p50/p99 per batch (goal: p50 ≤
// 2 ms).
func BenchmarkBatchOverhead(b *testing.B) {
	q := &query.Query{Sink: "noop", Checkpoint: "unused"}
	r := resolve(b, q)
	var (
		mu    sync.Mutex
		times []time.Duration
		last  time.Time
	)
	e, err := New(context.Background(), Options{Query: r, Store: mustLocalB(b), Source: &tickSource{}, Sink: NoopSink{},
		MaxBatches: b.N + 1, Log: io.Discard, OnProgress: func(*Progress) {
			now := time.Now()
			mu.Lock()
			if !last.IsZero() {
				times = append(times, now.Sub(last))
			}
			last = now
			mu.Unlock()
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	if _, err := e.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	slices.Sort(times)
	if len(times) > 0 {
		b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms/batch")
		b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms/batch")
	}
}

// BenchmarkMemory1M reads 1M records (100-byte values, 4 partitions) in one batch into the noop
// sink and reports the peak heap the engine added over the loaded broker.
func BenchmarkMemory1M(b *testing.B) {
	const n = 1_000_000
	ctx := context.Background()
	br := startBroker(b, embedkafka.TopicSpec{Name: "m", Partitions: 4})
	if err := kafka.FillTopic(ctx, br.Addr(), "m", n, 100); err != nil {
		b.Fatal(err)
	}
	q := kafkaQuery(br.Addr(), "subscribe=m")
	q.Trigger = "once"
	r := resolve(b, q)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		var peak atomic.Uint64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		t0 := time.Now()
		e, err := New(ctx, Options{Query: r, Store: storage.NewMem(), Sink: NoopSink{}, Log: io.Discard})
		if err != nil {
			b.Fatal(err)
		}
		st, err := e.Run(ctx)
		if err != nil {
			b.Fatal(err)
		}
		el := time.Since(t0)
		close(stop)
		wg.Wait()
		if st.Rows != n {
			b.Fatalf("rows %d", st.Rows)
		}
		b.ReportMetric(float64(peak.Load()-min(peak.Load(), base.HeapInuse))/(1<<20), "peak-heap-MB")
		b.ReportMetric(float64(n)/el.Seconds(), "rec/s")
	}
}

var _ = fmt.Sprint

func mustLocalB(b *testing.B) storage.Store {
	s, err := storage.NewLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkBatchVsTwoFsyncs measures the engine's per-batch cost as a ratio to its floor: the
// two durable writes a micro-batch needs (offsets/N and commits/N). Batches of one record go
// from tickSource to the noop sink on a local checkpoint; the floor is two files of the sizes
// of offsets/0 and commits/0 written with create-exclusive, write, fsync and close, in a
// directory of the same file system. A second floor is the create-only protocol the engine
// writes through (see atomic below). The three run in alternating blocks of blockLen (the
// engine's batches, then the floor's pairs, then atomic's, in the progress callback every
// blockLen batches), not one after the other: an fsync commits the file system's whole journal,
// so a floor run right after a batch would pay for the batch's deferred renames and deletes. The
// first of each block is left out. A batch's own time is the interval from the end of one
// progress callback to the start of the next. Reports the medians, their ratio (goal ≤ 1.2),
// and the median over the blocks of the per-block ratio (engine block median over the next
// floor block's), which drift of the disk between blocks does not move.
func BenchmarkBatchVsTwoFsyncs(b *testing.B) {
	q := &query.Query{Sink: "noop", Checkpoint: "unused"}
	r := resolve(b, q)
	ckpt := b.TempDir()
	floorDir := b.TempDir()
	store, err := storage.NewLocal(ckpt)
	if err != nil {
		b.Fatal(err)
	}
	var (
		sizes      [2]int
		payloads   [2][]byte
		last       time.Time
		engs, flrs []time.Duration
		atoms      []time.Duration
		ratios     []float64
		durs       []time.Duration
		dratios    []float64
		n          int
	)
	// atomic is atomicFloor, the engine's create-only protocol, for the same two files. It
	// splits the gap: engine over atomic is the engine's own cost, atomic over floor the price
	// of no-overwrite writes that survive a crash in order.
	af := newAtomicFloor(b, floorDir)
	atomic := func() time.Duration { return af.run(payloads) }
	// durable is the floor with each new name made durable too: the directory fsync'd after
	// the file, as POSIX asks of a write that must survive a power loss (the bare floor's
	// names may not).
	ddir := filepath.Join(floorDir, "d")
	if err := os.Mkdir(ddir, 0o755); err != nil {
		b.Fatal(err)
	}
	dn := 0
	durable := func() time.Duration {
		t0 := time.Now()
		for i, data := range payloads {
			createSyncedB(b, filepath.Join(ddir, fmt.Sprintf("%d-%d", i, dn)), data)
			syncDirB(b, ddir)
		}
		dn++
		return time.Since(t0)
	}
	floor := func() time.Duration {
		t0 := time.Now()
		for i, data := range payloads {
			createSyncedB(b, filepath.Join(floorDir, fmt.Sprintf("%d-%d", i, n)), data)
		}
		n++
		return time.Since(t0)
	}
	const blockLen = 50
	var blockEng []time.Duration
	blocks := 0
	med := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	e, err := New(context.Background(), Options{Query: r, Store: store, Source: &tickSource{}, Sink: NoopSink{},
		// At least two blocks, also for the testing package's first run with b.N = 1.
		MaxBatches: max(b.N, 2*blockLen) + 2, Log: io.Discard, OnProgress: func(p *Progress) {
			now := time.Now()
			if payloads[0] == nil {
				for i, f := range []string{"offsets/0", "commits/0"} {
					fi, err := os.Stat(filepath.Join(ckpt, f))
					if err != nil {
						b.Fatal(err)
					}
					sizes[i] = int(fi.Size())
					payloads[i] = bytes.Repeat([]byte{'x'}, sizes[i])
				}
				last = time.Now()
				return
			}
			// From the end of the previous callback to this one: the engine alone. The first
			// batch after a block of floors is left out.
			if len(blockEng) > 0 || blocks == 0 {
				blockEng = append(blockEng, now.Sub(last))
			} else {
				blockEng = append(blockEng, -1)
			}
			if len(blockEng) == blockLen {
				eb := slices.DeleteFunc(slices.Clone(blockEng), func(d time.Duration) bool { return d < 0 })
				engs = append(engs, eb...)
				var fb []time.Duration
				for k := range blockLen {
					if f := floor(); k > 0 {
						fb = append(fb, f)
					}
				}
				for k := range blockLen {
					if a := atomic(); k > 0 {
						atoms = append(atoms, a)
					}
				}
				var db []time.Duration
				for k := range blockLen {
					if d := durable(); k > 0 {
						db = append(db, d)
					}
				}
				durs = append(durs, db...)
				dratios = append(dratios, med(eb).Seconds()/med(db).Seconds())
				flrs = append(flrs, fb...)
				ratios = append(ratios, med(eb).Seconds()/med(fb).Seconds())
				blockEng = blockEng[:0]
				blocks++
			}
			last = time.Now()
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	if _, err := e.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if len(ratios) == 0 {
		b.Fatalf("fewer than %d batches", blockLen+1)
	}
	me, mf := med(engs), med(flrs)
	slices.Sort(ratios)
	b.ReportMetric(float64(me.Microseconds())/1000, "engine-p50-ms")
	b.ReportMetric(float64(mf.Microseconds())/1000, "floor-p50-ms")
	b.ReportMetric(me.Seconds()/mf.Seconds(), "x-floor")
	b.ReportMetric(meanD(engs).Seconds()/meanD(flrs).Seconds(), "x-floor-mean")
	b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
	b.ReportMetric(float64(sizes[0]+sizes[1]), "bytes/batch")
	ma := med(atoms)
	b.ReportMetric(float64(ma.Microseconds())/1000, "atomic-p50-ms")
	b.ReportMetric(me.Seconds()/ma.Seconds(), "x-atomic")
	md := med(durs)
	slices.Sort(dratios)
	b.ReportMetric(float64(md.Microseconds())/1000, "durable-p50-ms")
	b.ReportMetric(me.Seconds()/md.Seconds(), "x-durable")
	b.ReportMetric(dratios[len(dratios)/2], "median-ratio-durable")
}

// createSyncedB is one durable write of the floors: create-exclusive, write, fsync, close.
func createSyncedB(b *testing.B, path string, data []byte) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

func syncDirB(b *testing.B, dir string) {
	d, err := os.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
	d.Close()
}

func meanD(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// atomicFloor is the floor of storage.Local's create-only protocol for a batch's two files, as
// the engine uses it (docs/design.md, "Durability of local writes"): each file written unnamed
// (O_TMPFILE) and fsync'd, the other log's directory fsync'd after it (alongside it on ext4
// without a journal; commits/ before offsets/N+1 is named, offsets/ before commits/N is), then
// linked, which never replaces (a named temporary file, linked and removed, elsewhere); the
// purge's two deletes after commits/N, without fsync.
type atomicFloor struct {
	b          *testing.B
	dirs       [2]string
	concurrent bool
	n          int
}

func newAtomicFloor(b *testing.B, dir string) *atomicFloor {
	a := &atomicFloor{b: b, dirs: [2]string{filepath.Join(dir, "o"), filepath.Join(dir, "c")}, concurrent: storage.Journalless(dir)}
	for _, d := range a.dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	return a
}

// run writes the next pair of files with payloads' contents and returns the time it took.
func (a *atomicFloor) run(payloads [2][]byte) time.Duration {
	b := a.b
	defer func() { a.n++ }()
	t0 := time.Now()
	for i, data := range payloads {
		other := func() {}
		if i == 1 || a.n > 0 {
			if a.concurrent {
				c := make(chan struct{})
				go func() { defer close(c); syncDirB(b, a.dirs[1-i]) }()
				other = func() { <-c }
			} else {
				other = func() { syncDirB(b, a.dirs[1-i]) }
			}
		}
		atomicWriteB(b, a.dirs[i], fmt.Sprint(a.n), data, other)
		if i == 1 && a.n > 0 { // the purge, after commits/N as in the engine
			for _, d := range a.dirs {
				if err := os.Remove(filepath.Join(d, fmt.Sprint(a.n-1))); err != nil && !os.IsNotExist(err) {
					b.Fatal(err)
				}
			}
		}
	}
	return time.Since(t0)
}

// BenchmarkKafkaBatchVsFloor is BenchmarkBatchVsTwoFsyncs with the Kafka source: batches of one
// record (maxOffsetsPerTrigger=1) from a one-partition topic on the embedded broker (kfake over
// the wire protocol, in this process) into the noop sink, local checkpoint. The topic holds a
// backlog of one record per produce request, so that every batch has exactly one record to read.
// The floor of a batch is what it cannot do without: one ListOffsets (the latest offset) and one
// Fetch of the batch's record, on a connected client, from a second topic with the same backlog,
// and the two durable atomic writes of atomicFloor with the sizes of offsets/0 and commits/0.
// Engine batches and floors run in alternating blocks of 50, as in BatchVsTwoFsyncs, the first
// of each block left out. Reports the ratio of the means (`x-floor-mean`, goal ≤ 1.2), of the
// medians (`x-floor`), the median over blocks of the per-block ratio of means, and the floor's
// two parts.
func BenchmarkKafkaBatchVsFloor(b *testing.B) {
	const blockLen = 50
	batches := max(b.N, 2*blockLen) + 2
	ctx := context.Background()
	br := startBroker(b, embedkafka.TopicSpec{Name: "lat", Partitions: 1}, embedkafka.TopicSpec{Name: "floor", Partitions: 1})
	pc, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		b.Fatal(err)
	}
	defer pc.Close()
	for _, topic := range []string{"lat", "floor"} {
		for i := range batches + blockLen {
			if err := pc.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s-%d", topic, i)}).FirstErr(); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The floor's Kafka requests: ListOffsets, then a Fetch of the offset it reads next.
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, pc)
	if err != nil {
		b.Fatal(err)
	}
	var floorID [16]byte
	for _, t := range meta.Topics {
		if t.Topic != nil && *t.Topic == "floor" {
			floorID = t.TopicID
		}
	}
	var next int64
	kafkaFloor := func() {
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.ReplicaID = -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "floor"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		lr, err := lo.RequestWith(ctx, pc)
		if err != nil || len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 || lr.Topics[0].Partitions[0].Offset <= next {
			b.Fatalf("list offsets: %v %+v", err, lr)
		}
		f := kmsg.NewPtrFetchRequest()
		f.ReplicaID = -1
		f.MaxWaitMillis = 100
		f.MinBytes = 1
		f.MaxBytes = 50 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "floor"
		ft.TopicID = floorID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset = next
		fp.PartitionMaxBytes = 1 // the first record batch at next: the one record
		ft.Partitions = append(ft.Partitions, fp)
		f.Topics = append(f.Topics, ft)
		fr, err := f.RequestWith(ctx, pc.Broker(int(meta.Brokers[0].NodeID)))
		if err != nil || len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 || len(fr.Topics[0].Partitions[0].RecordBatches) == 0 {
			b.Fatalf("fetch: %v %+v", err, fr)
		}
		next++
	}
	q := kafkaQuery(br.Addr(), "subscribe=lat", "maxOffsetsPerTrigger=1")
	q.Checkpoint = "unused"
	r := resolve(b, q)
	ckpt := b.TempDir()
	store, err := storage.NewLocal(ckpt)
	if err != nil {
		b.Fatal(err)
	}
	af := newAtomicFloor(b, b.TempDir())
	var (
		payloads         [2][]byte
		last             time.Time
		blockEng         []time.Duration
		engs, flrs       []time.Duration
		kafkas, atoms    []time.Duration
		ratios           []float64
		blocks, gotBatch int
	)
	med := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	e, err := New(ctx, Options{Query: r, Store: store, Sink: NoopSink{}, MaxBatches: batches, Log: io.Discard, OnProgress: func(p *Progress) {
		now := time.Now()
		gotBatch++
		if p.NumInputRows != 1 {
			b.Fatalf("batch %d read %d rows, want 1", p.BatchID, p.NumInputRows)
		}
		if payloads[0] == nil {
			for i, f := range []string{"offsets/0", "commits/0"} {
				data, err := os.ReadFile(filepath.Join(ckpt, f))
				if err != nil {
					b.Fatal(err)
				}
				payloads[i] = bytes.Repeat([]byte{'x'}, len(data))
			}
			last = time.Now()
			return
		}
		if len(blockEng) > 0 || blocks == 0 {
			blockEng = append(blockEng, now.Sub(last))
		} else {
			blockEng = append(blockEng, -1) // the first batch after a block of floors
		}
		if len(blockEng) == blockLen {
			eb := slices.DeleteFunc(slices.Clone(blockEng), func(d time.Duration) bool { return d < 0 })
			engs = append(engs, eb...)
			var fb []time.Duration
			for k := range blockLen {
				t0 := time.Now()
				kafkaFloor()
				t1 := time.Now()
				a := af.run(payloads)
				if k > 0 {
					kafkas = append(kafkas, t1.Sub(t0))
					atoms = append(atoms, a)
					fb = append(fb, t1.Sub(t0)+a)
				}
			}
			flrs = append(flrs, fb...)
			ratios = append(ratios, meanD(eb).Seconds()/meanD(fb).Seconds())
			blockEng = blockEng[:0]
			blocks++
		}
		last = time.Now()
	}})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	if _, err := e.Run(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if len(ratios) == 0 {
		b.Fatalf("fewer than %d batches", blockLen+1)
	}
	me, mf := med(engs), med(flrs)
	slices.Sort(ratios)
	b.ReportMetric(float64(meanD(engs).Microseconds())/1000, "engine-mean-ms")
	b.ReportMetric(float64(meanD(flrs).Microseconds())/1000, "floor-mean-ms")
	b.ReportMetric(meanD(engs).Seconds()/meanD(flrs).Seconds(), "x-floor-mean")
	b.ReportMetric(me.Seconds()/mf.Seconds(), "x-floor")
	b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
	b.ReportMetric(float64(med(kafkas).Microseconds())/1000, "kafka-floor-p50-ms")
	b.ReportMetric(float64(med(atoms).Microseconds())/1000, "atomic-p50-ms")
}
