package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Crash-drill phases for --fail-at.
const (
	PhaseAfterOffsets = "after-offsets" // offsets/N written, nothing read
	PhaseMidSink      = "mid-sink"      // part of batch N's output written
	PhaseBeforeCommit = "before-commit" // batch N's output complete, commits/N not written
	// PhaseMidStateCommit: a streaming aggregation wrote state/0/0/<N+1>.delta and no other
	// partition's (with one partition: that one, before the output).
	PhaseMidStateCommit = "mid-state-commit"
)

// FailAt makes the process exit abruptly at one point of one batch (for drills and tests).
type FailAt struct {
	Batch int64
	Phase string
}

// ParseFailAt reads "batch=N,phase=P".
func ParseFailAt(s string) (*FailAt, error) {
	if s == "" {
		return nil, nil
	}
	f := &FailAt{Batch: -1}
	for _, part := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "batch":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("--fail-at %q: batch must be a batch id ≥ 0", s)
			}
			f.Batch = n
		case "phase":
			switch v {
			case PhaseAfterOffsets, PhaseMidStateCommit, PhaseMidSink, PhaseBeforeCommit:
				f.Phase = v
			default:
				return nil, fmt.Errorf("--fail-at %q: phase must be after-offsets, mid-state-commit, mid-sink or before-commit", s)
			}
		default:
			return nil, fmt.Errorf("--fail-at %q: want batch=N,phase=after-offsets|mid-state-commit|mid-sink|before-commit", s)
		}
	}
	if f.Batch < 0 || f.Phase == "" {
		return nil, fmt.Errorf("--fail-at %q: want batch=N,phase=after-offsets|mid-state-commit|mid-sink|before-commit", s)
	}
	return f, nil
}

// FailExitCode is the exit status of a --fail-at crash: the process SIGKILLs itself, which a
// shell reports as 137.
const FailExitCode = 137

// DefaultPollingDelay is spark.sql.streaming.pollingDelay: how long the default trigger waits
// after a trigger found no new data.
const DefaultPollingDelay = 10 * time.Millisecond

// Options configure an Engine. Only Query and Store are required.
type Options struct {
	// Query is the validated query.
	Query *query.Resolved
	// Store is the checkpoint location.
	Store storage.Store
	// Source overrides the source built from the query (tests). Default: Kafka from Query.Options.
	Source Source
	// Sink overrides the sink built from the query (tests). Default: from Query.Sink.
	Sink Sink
	// Clock drives triggers and timestamps. Default: RealClock.
	Clock Clock
	// Log receives the driver log: what the engine does, planner warnings. Default: io.Discard.
	Log io.Writer
	// Console is where the console sink prints. Default: os.Stdout.
	Console io.Writer
	// OnProgress is called after every batch with its progress event. Default: none.
	OnProgress func(*Progress)
	// Metrics, when set, is updated after every batch (Prometheus exposition).
	Metrics *Metrics
	// StopTimeout bounds how long a stop (context cancelled) waits for the running batch before
	// abandoning it. Default: query.DefaultStopTimeout (30s).
	StopTimeout time.Duration
	// MaxBatches stops after this many batches have run (re-runs included). Default 0: no limit.
	MaxBatches int
	// FailAt crashes the process at a chosen point. Default: nil.
	FailAt *FailAt
	// Exit ends the process for FailAt. Default: SIGKILL to itself (os.Exit where there are
	// no signals).
	Exit func(code int)
	// PollingDelay is the default trigger's wait when there was no new data. Default
	// DefaultPollingDelay (10ms).
	PollingDelay time.Duration
	// OpenStore opens the file sink's output location. Default: storage.Open with default
	// options.
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)
	// RunID is the run id in progress events. Default: a new UUID.
	RunID string
	// AsyncSwitchOff performs Spark's procedure for switching async progress tracking off: the
	// run starts in async mode (the async planner, so gaps are tolerated) with a checkpoint
	// interval of 0 and continues as the normal engine once 2 batches have persisted their
	// offsets and commits. The query must not enable async progress tracking itself.
	AsyncSwitchOff bool
	// SparkVersion is the Spark release (a recovery.SparkVersions line) that will read the
	// checkpoint; it decides only the key order of the Kafka offset JSON the engine writes
	// (offsets/, sources/0/0, progress): 3.x Scala 2.12's HashMap order, 4.0 and later Scala 2.13's
	// (order.go). Restart rules stay Spark 3.5's. Default "": the order of the checkpoint's latest
	// offsets file where it tells one from the other, else 3.5's.
	SparkVersion string
}

func (o *Options) defaults() {
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Console == nil {
		o.Console = os.Stdout
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = query.DefaultStopTimeout
	}
	if o.Exit == nil {
		o.Exit = killSelf
	}
	if o.OpenStore == nil {
		o.OpenStore = func(ctx context.Context, uri string) (storage.Store, error) {
			return storage.Open(ctx, uri, storage.Options{})
		}
	}
	if o.PollingDelay == 0 {
		o.PollingDelay = DefaultPollingDelay
	}
}
