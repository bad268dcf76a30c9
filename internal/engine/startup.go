// Engine start-up: the restart plan, temporary files of interrupted writes, and the initial offsets.

package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// start: metadata, the recovery planner, and the position to continue from.
func (e *Engine) start(ctx context.Context) error {
	store := e.opts.Store
	cp, err := checkpoint.Load(ctx, store)
	if err != nil {
		return err
	}
	if cp.HasMetadata() {
		m, err := cp.ReadMetadata(ctx)
		if err != nil {
			return fmt.Errorf("Error reading stream metadata from %s: %w", cp.SparkPath(checkpoint.FileMetadata), err)
		}
		if m.ID != e.queryID {
			return errors.New(recovery.ConcurrentUse(checkpoint.FileMetadata))
		}
	}
	e.seedOffsets, e.seedCommits = slices.Clone(cp.Offsets.IDs()), slices.Clone(cp.Commits.IDs())

	mode := recovery.ModeSync
	if e.asyncMode() {
		mode = recovery.ModeAsync
	}
	// The engine runs one Kafka source; telling the planner lets it apply Spark's source-count
	// assertion against the real query instead of its model of one.
	ropts := recovery.Options{Mode: mode, SparkVersion: SparkVersion, QuerySources: 1}
	if fs, ok := e.sink.(interface {
		LatestBatch(context.Context) (int64, bool, error)
	}); ok {
		if id, ok, err := fs.LatestBatch(ctx); err != nil {
			return err
		} else if ok {
			ropts.SinkLatest = &id
		}
	}
	assessed, err := recovery.Assess(ctx, cp, ropts)
	if err != nil {
		return err
	}
	plan := assessed.Plan
	if plan.LatestCommit != nil {
		e.stats.LastDurableCommit = *plan.LatestCommit
	}
	for _, l := range plan.DriverLog {
		e.logf("%s", l)
	}
	for _, w := range plan.Warnings {
		e.logf("WARN %s", w)
	}
	if plan.Failed() {
		refused := &RefusedError{Plan: plan, Checkpoint: store.URI()}
		if mode == recovery.ModeSync && e.q.Sink != query.SinkFile && assessed.Trap != nil {
			// The switch-off trap: gaps only the async engine tolerates. Stop before touching
			// anything; the command names the ways out.
			refused.Trap, refused.Offsets, refused.Commits = assessed.Trap, cp.Offsets.IDs(), cp.Commits.IDs()
			refused.NoSwitchOff = query.AsyncTriggerRefusal(e.q.Trigger.Kind)
		}
		return refused
	}

	if !cp.HasMetadata() {
		// StreamingQueryCheckpointMetadata: a missing metadata file is written with a new id.
		m := &logformat.StreamMetadata{ID: e.queryID}
		if err := store.WriteFile(ctx, checkpoint.FileMetadata, m.Marshal()); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return errors.New(recovery.ConcurrentUse(checkpoint.FileMetadata))
			}
			return err
		}
		e.logf("Created %s with query id %s", cp.SparkPath(checkpoint.FileMetadata), m.ID)
	}
	e.stats.QueryID, e.stats.RunID = e.queryID, e.runID

	// Leftovers of interrupted atomic writes (a crash between the temporary file and the
	// rename: ".<name>.<uuid>.tmp") are never read. Spark leaves them; so does the engine, and
	// says so: nothing is destroyed without a plan and a backup (ckpt repair removes them).
	if err := e.noteTemps(ctx, cp); err != nil {
		return err
	}

	latest, hasOffsets := cp.Offsets.Latest()
	if !hasOffsets {
		e.stats.FreshStart = true
		e.nextBatch = plan.NextBatch
		return nil
	}
	seq, err := cp.ReadOffsets(ctx, latest)
	if err != nil {
		return err
	}
	// Spark's setSessionConf: the latest offsets file's conf is what later batches record.
	e.conf = restoredConf(e.conf, seq.Metadata)
	if err := e.restoreWatermark(ctx, cp, latest, seq, plan.RerunBatch == nil); err != nil {
		return err
	}
	end, err := sourceOffsets(cp, latest, seq)
	if err != nil {
		return err
	}
	if e.opts.SparkVersion == "" && end != nil {
		// Keep writing the order the checkpoint was last written in (by Spark or by a run with
		// SparkVersion set), so that the release reading it sees no change.
		if is213, known := orderOf(*end); known && is213 != e.scala213 {
			e.scala213 = is213
			e.logf("Writing Kafka offsets in Scala %s's key order, as offsets/%d has them", map[bool]string{true: "2.13", false: "2.12"}[is213], latest)
		}
	}
	if plan.RerunBatch != nil {
		l := *plan.RerunBatch
		b := &pendingBatch{id: l, rerun: true, timestampMs: plan.BatchTimestampMs}
		if l != latest {
			return fmt.Errorf("engine: the planner re-runs batch %d but the latest offsets are %d", l, latest)
		}
		if end == nil {
			return fmt.Errorf("engine: offsets/%d has no offset for the Kafka source", l)
		}
		b.end, b.latest = *end, *end
		if e.wm != nil {
			b.watermarkMs = e.wm.current
			if b.lateMs, err = batchWatermarkAt(ctx, cp, l-1); err != nil {
				return err
			}
		}
		if plan.RerunRange != nil && len(plan.RerunRange.Start) > 0 && !recovery.NullOffset(plan.RerunRange.Start[0]) {
			s, err := logformat.ParseKafkaOffsets(cp.SparkPath(fmt.Sprintf("offsets/%d", l-1)), string(plan.RerunRange.Start[0]))
			if err != nil {
				return err
			}
			b.start = &s
		}
		e.rerun = b
		e.nextBatch = l + 1
		e.committed = end
		e.logf("Resuming query %s: re-running batch %d with the offsets in offsets/%d, then continuing at batch %d", e.queryID, l, l, l+1)
		return nil
	}
	e.nextBatch = plan.NextBatch
	e.committed = end
	e.logf("Resuming query %s at batch %d", e.queryID, e.nextBatch)
	return nil
}

// noteTemps reports, without touching them, the temporary files of interrupted writes in the
// root, offsets/, commits/ and sources/0/.
func (e *Engine) noteTemps(ctx context.Context, cp *checkpoint.Checkpoint) error {
	var temps []string
	for _, l := range []*checkpoint.Log{cp.Offsets, cp.Commits} {
		for _, t := range l.Temps {
			temps = append(temps, t.Path)
		}
	}
	src, err := e.opts.Store.List(ctx, checkpoint.DirSources+"/0")
	if err != nil {
		return err
	}
	for _, en := range append(slices.Clone(cp.Root), src...) {
		name := path.Base(en.Path)
		if !en.IsDir && strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") {
			temps = append(temps, en.Path)
		}
	}
	if len(temps) == 0 {
		return nil
	}
	shown := temps[:min(len(temps), 5)]
	more := ""
	if len(temps) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(temps)-len(shown))
	}
	e.logf("Left %d temporary file(s) of interrupted writes in place, as Spark does (never read): %s%s; `ckpt repair` removes them with a backup",
		len(temps), strings.Join(shown, ", "), more)
	return nil
}

func sourceOffsets(cp *checkpoint.Checkpoint, id int64, seq *logformat.OffsetSeq) (*logformat.KafkaOffsets, error) {
	s := seq.Sources[0]
	if s.Void {
		return nil, nil
	}
	k, err := logformat.ParseKafkaOffsets(cp.SparkPath(fmt.Sprintf("offsets/%d", id)), s.JSON)
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// initialOffsets reads sources/0/0, or resolves startingOffsets and writes it (Spark's
// getOrCreateInitialPartitionOffsets).
func (e *Engine) initialOffsets(ctx context.Context) (logformat.KafkaOffsets, error) {
	if e.initial != nil {
		return *e.initial, nil
	}
	store := e.opts.Store
	k, err := checkpoint.ReadKafkaInitialOffsetsFrom(ctx, store, 0)
	var pe *logformat.Error
	switch {
	case err == nil:
		e.initial = &k.Offsets
		return k.Offsets, nil
	case errors.As(err, &pe):
		return logformat.KafkaOffsets{}, fmt.Errorf("%s%w", recovery.WrapRead(initialOffsetsPath, ""), err)
	case !errors.Is(err, fs.ErrNotExist):
		return logformat.KafkaOffsets{}, err
	}
	o, err := e.src.InitialOffsets(ctx)
	if err != nil {
		return logformat.KafkaOffsets{}, err
	}
	o = e.ordered(o)
	if err := store.WriteFile(ctx, initialOffsetsPath, logformat.MarshalKafkaInitialOffsets(o)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return logformat.KafkaOffsets{}, errors.New(recovery.ConcurrentUse(checkpoint.DirSources + "/0"))
		}
		return logformat.KafkaOffsets{}, err
	}
	e.logf("Wrote the Kafka initial offsets to %s: %s", initialOffsetsPath, o.JSON())
	e.initial = &o
	return o, nil
}
