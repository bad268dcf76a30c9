//go:build unix

package engine

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) the test process has used so far: benchmarks that
// compare two workloads run one after the other measure each by the difference, which a busy
// machine disturbs less than the wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
