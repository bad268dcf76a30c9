// Package recovery is the one recovery planner: Plan predicts what a restart
// of a Spark Structured Streaming query does with a checkpoint, per engine
// mode and Spark release. `ckpt replay`, doctor, repair verification and the
// ckpt engine all start from it, so there is one definition of Spark's
// restart rules (docs/design.md).
//
// The rules follow MicroBatchExecution.populateStartOffsets and its async
// override (see docs/spark-semantics.md §5, §6). Plan
// reads O(1) files: the latest offsets file, the one before it, the latest
// commit, the metadata file, and, for a Kafka source that restarts from its
// initial offsets, sources/<i>/0.
package recovery

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// Plan predicts the restart of the query whose checkpoint is cp. It returns
// an error only when ckpt cannot read what it needs (I/O) or opts are
// invalid; a restart Spark refuses is a Result with Outcome "fail".
func Plan(ctx context.Context, cp *checkpoint.Checkpoint, opts Options) (*Result, error) {
	cfg, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	res, err := plan(ctx, cp, cfg)
	if err != nil {
		return nil, err
	}
	res.Releases, err = releaseNotes(ctx, cp, cfg, res)
	if err != nil {
		return nil, err
	}
	if err := assessBroker(ctx, cp, cfg.broker, cfg.failOnDataLoss, res); err != nil { // brokerrestart.go
		return nil, err
	}
	if err := assessDelta(ctx, cp, cfg.delta, res); err != nil { // delta.go
		return nil, err
	}
	return res, nil
}

type planner struct {
	ctx   context.Context
	cp    *checkpoint.Checkpoint
	cfg   config
	rel   release
	res   *Result
	class string // engine logger name

	L, C       int64
	hasL, hasC bool

	// running is set once a batch is known to start before any failure,
	// so a later failure keeps NextBatch.
	running bool

	latest  *logformat.OffsetSeq // offsets/L
	start   *logformat.OffsetSeq // offsets of the previous batch, nil when none
	startID int64
	commit  *logformat.Commit // commits/C

	// querySources is the running query's number of sources as ckpt models
	// it (checkLatestSources).
	querySources int

	// endOffsetFailed is set when the re-run fails on its end offset (offsets/L), not its start.
	endOffsetFailed bool
}

// errFailed stops the planner once Spark's failure is recorded in res.
var errFailed = errors.New("restart fails")

func plan(ctx context.Context, cp *checkpoint.Checkpoint, cfg config) (*Result, error) {
	p := &planner{ctx: ctx, cp: cp, cfg: cfg, rel: cfg.rel, class: engineClass(cfg.mode, cfg.rel)}
	p.res = &Result{
		Outcome:      OutcomeResume,
		Warnings:     []string{},
		Mode:         cfg.mode,
		SparkVersion: cfg.version(),
	}
	p.L, p.hasL = cp.Offsets.Latest()
	p.C, p.hasC = cp.Commits.Latest()
	if p.hasL {
		p.res.LatestOffsets = ptr(p.L)
		p.res.PreviousBatch = p.previousBatch()
	}
	if p.hasC {
		p.res.LatestCommit = ptr(p.C)
	}
	err := p.run()
	if errors.Is(err, errFailed) {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	p.planState(cfg.state) // state.go: the first batch loads its state version
	return p.res, nil
}

func (p *planner) run() error {
	if err := p.checkMetadata(); err != nil {
		return err
	}
	usesCommits := p.cfg.mode != ModeSpark21
	if p.rel.readsLogsUpFront() {
		// 4.1+: initializeExecution reads both latest entries; 4.2+ then
		// asserts that no commit exists without an offsets entry.
		if p.hasL {
			if err := p.checkSpan(p.cp.Offsets); err != nil {
				return err
			}
			if err := p.checkLatestReadable(p.cp.Offsets); err != nil {
				return err
			}
			if err := p.readLatest(); err != nil {
				return err
			}
		}
		if p.hasC {
			if err := p.checkSpan(p.cp.Commits); err != nil {
				return err
			}
			if err := p.checkLatestReadable(p.cp.Commits); err != nil {
				return err
			}
			if err := p.readCommit(); err != nil {
				return err
			}
		}
		if !p.hasL && p.hasC && p.rel.assertsCommitsNeedOffsets() {
			return p.fail(ReasonEmptyOffsetsWithCommits, "", sparkFailure{exception: excAssertion, message: "assertion failed", exact: true})
		}
		if err := p.checkUnfinishedRepartition(); err != nil {
			return err
		}
	}
	if !p.hasL {
		return p.freshStart(usesCommits)
	}
	if p.latest == nil {
		if err := p.checkSpan(p.cp.Offsets); err != nil {
			return err
		}
		if err := p.checkLatestReadable(p.cp.Offsets); err != nil {
			return err
		}
		if err := p.readLatest(); err != nil {
			return err
		}
	}
	if p.cfg.mode == ModeSpark21 {
		p.log("INFO", "Resuming streaming query, starting with batch %d", p.L)
	}
	// populateStartOffsets: endOffsets = offsets/L's toStreamProgress, then
	// the previous offsets file, then the commit log.
	if err := p.checkLatestSources(); err != nil {
		return err
	}
	if err := p.resolveStart(); err != nil {
		return err
	}
	if usesCommits && p.hasC && p.commit == nil {
		if err := p.checkSpan(p.cp.Commits); err != nil {
			return err
		}
		if err := p.checkLatestReadable(p.cp.Commits); err != nil {
			return err
		}
		if err := p.readCommit(); err != nil {
			return err
		}
	}
	return p.decide(usesCommits)
}

// fail records Spark's failure and stops planning. reason is one of
// Reasons; file is the checkpoint-relative file the failure is about, or "".
func (p *planner) fail(reason, file string, f sparkFailure, log ...string) error {
	r := p.res
	r.recordFailure(reason, file, f)
	r.DriverLog = append(r.DriverLog, log...)
	if !p.running {
		r.NextBatch = -1
	}
	return errFailed
}

// previousBatch is the offsets file the restart starts from, from the
// listing: offsets/L-1 (sync, Spark 2.1) or the nearest lower id (async,
// getPrevBatchFromStorage).
func (p *planner) previousBatch() *int64 {
	if !p.hasL || p.L == 0 {
		return nil
	}
	if p.cfg.mode == ModeAsync {
		if prev, ok := p.cp.Offsets.Prev(p.L); ok {
			return ptr(prev)
		}
		return nil
	}
	if p.cp.Offsets.Has(p.L-1) && p.cp.Offsets.FilePath(p.L-1) == p.cp.Offsets.Path(p.L-1) {
		return ptr(p.L - 1)
	}
	return nil
}

func (p *planner) warn(format string, a ...any) {
	p.res.Warnings = append(p.res.Warnings, fmt.Sprintf(format, a...))
}

func (p *planner) log(level, format string, a ...any) {
	p.res.DriverLog = append(p.res.DriverLog, level+" "+p.class+": "+fmt.Sprintf(format, a...))
}

// sourcesText renders "1 source", "2 sources".
func sourcesText(n int) string {
	if n == 1 {
		return "1 source"
	}
	return fmt.Sprintf("%d sources", n)
}

// batchesText renders a batch range: "batch 6" or "batches 6..9".
func batchesText(from, to int64) string {
	if from == to {
		return fmt.Sprintf("batch %d", from)
	}
	return fmt.Sprintf("batches %d..%d", from, to)
}

// releaseNotes plans the same checkpoint under every release of the mode
// and groups the releases whose behaviour differs from cfg's.
func releaseNotes(ctx context.Context, cp *checkpoint.Checkpoint, cfg config, res *Result) ([]ReleaseNote, error) {
	if cfg.mode == ModeSpark21 {
		return nil, nil
	}
	key := func(r *Result) string { return fmt.Sprintf("%s|%s|%d", r.key, r.Outcome, r.NextBatch) }
	want := key(res)
	var order []string
	groups := map[string]*ReleaseNote{}
	for _, v := range SparkVersions {
		rel, _ := parseRelease(v)
		if rel == mkRelease(2, 1) || (cfg.mode == ModeAsync && !rel.atLeast(3, 4)) {
			continue
		}
		c := cfg
		c.rel, c.patch, c.patchGiven = rel, defaultPatch(rel), false
		r, err := plan(ctx, cp, c)
		if err != nil {
			return nil, err
		}
		k := key(r)
		if k == want {
			continue
		}
		g, ok := groups[k]
		if !ok {
			g = &ReleaseNote{Outcome: r.Outcome, NextBatch: r.NextBatch, Error: r.Error, Summary: r.Verdict()}
			groups[k] = g
			order = append(order, k)
		}
		g.Versions = append(g.Versions, v)
	}
	notes := make([]ReleaseNote, 0, len(order))
	for _, k := range order {
		notes = append(notes, *groups[k])
	}
	sort.SliceStable(notes, func(i, j int) bool { return notes[i].Versions[0] < notes[j].Versions[0] })
	return notes, nil
}
