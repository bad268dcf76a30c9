package storage

import (
	"context"
	"path"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkLocalUnnamedVsNamed writes 200 small files (one per directory, as a state
// commit's deltas) through Local's two publish paths in turn, unnamed (O_TMPFILE, linkat)
// then named (a temporary name, renameat2 RENAME_NOREPLACE), alternating which goes first,
// and reports their wall and CPU time per round and the ratios unnamed/named.
func BenchmarkLocalUnnamedVsNamed(b *testing.B) {
	ctx := context.Background()
	const files = 200
	data := make([]byte, 700)
	root := b.TempDir()
	stores := [2]*Local{}
	for i := range stores {
		l, err := NewLocal(path.Join(root, strconv.Itoa(i)))
		if err != nil {
			b.Fatal(err)
		}
		l.named.Store(i == 1)
		stores[i] = l
	}
	var wall, cpu [2]time.Duration
	round := func(i, n int) {
		t0, c0 := time.Now(), benchCPU()
		for p := 0; p < files; p++ {
			if err := stores[i].WriteFile(ctx, path.Join(strconv.Itoa(p), strconv.Itoa(n)), data); err != nil {
				b.Fatal(err)
			}
		}
		wall[i] += time.Since(t0)
		cpu[i] += benchCPU() - c0
	}
	round(0, 0)
	round(1, 0)
	wall, cpu = [2]time.Duration{}, [2]time.Duration{}
	b.ResetTimer()
	for n := 1; n <= b.N; n++ {
		first := n % 2
		round(first, n)
		round(1-first, n)
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) / 1000 }
	b.ReportMetric(ms(wall[0]), "unnamed-ms")
	b.ReportMetric(ms(wall[1]), "named-ms")
	b.ReportMetric(ms(cpu[0]), "unnamed-cpu-ms")
	b.ReportMetric(ms(cpu[1]), "named-cpu-ms")
	b.ReportMetric(wall[0].Seconds()/wall[1].Seconds(), "x-named")
	b.ReportMetric(cpu[0].Seconds()/cpu[1].Seconds(), "x-named-cpu")
}

// benchCPU is the process's user and system CPU time.
func benchCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
