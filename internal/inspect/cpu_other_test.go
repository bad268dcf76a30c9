//go:build !unix

package inspect

import "time"

// cpuTime is unavailable here; benchmarks then report only wall-time ratios.
func cpuTime() time.Duration { return 0 }
