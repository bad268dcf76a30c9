//go:build unix

package inspect

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time: unlike wall time it barely moves when other
// processes compete for the machine, so ratios stay meaningful on a busy CI host.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
