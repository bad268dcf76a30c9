//go:build !unix

package engine

import "time"

// processCPU is not measured here; benchmarks then leave out their CPU-time metrics.
func processCPU() time.Duration { return 0 }
