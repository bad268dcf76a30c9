package repair

import (
	"context"
	"slices"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// mustRepair are the scenarios the issue names as repairable; the corpus test fails if any of them
// stops producing a plan, so a change elsewhere cannot silently turn repair into a no-op.
var mustRepair = []string{
	"async-interval-0-3", "async-trap-0-3-7", "commits-ahead", "commits-ahead-gap",
	"corrupt-latest-commit-empty", "corrupt-latest-offsets-empty", "corrupt-latest-offsets-truncated",
	"leftovers", "missing-previous-offsets", "missing-previous-offsets-committed",
}

func TestCorpusMem(t *testing.T) {
	runCorpus(t, false, func(t *testing.T, name string) storage.Store { return storage.NewMem() })
}

// The Local and S3 runs take only the scenarios that have a repair (the Mem run shows that the
// others plan nothing and change nothing): writing big scenarios file by file with fsync or one PUT
// each costs minutes and tests nothing of repair's.
func TestCorpusLocal(t *testing.T) {
	runCorpus(t, true, func(t *testing.T, name string) storage.Store {
		s, err := storage.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestCorpusS3(t *testing.T) {
	client, bucket := storetest.S3Bucket(t)
	runCorpus(t, true, func(t *testing.T, name string) storage.Store {
		return storage.NewS3FromClient(client, bucket, storetest.RandomName(name+"-"))
	})
}

// runCorpus takes every scenario through doctor, the plan, execute, replay, a second plan and
// undo, for every strategy that changes files.
func runCorpus(t *testing.T, onlyRepairable bool, newStore func(t *testing.T, name string) storage.Store) {
	ctx := context.Background()
	var repaired []string
	for _, sc := range scenario.All() {
		if onlyRepairable && !repairable(t, sc) {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			s := newStore(t, sc.Name)
			if err := sc.WriteTo(ctx, s); err != nil {
				t.Fatal(err)
			}
			orig := journaltest.Snapshot(t, s)
			popts := recovery.Options{SinkLatest: sc.SinkLatest}
			p, err := NewPlan(ctx, s, Options{Planner: popts})
			if err != nil {
				t.Fatal(err)
			}
			var strategies []Strategy
			for _, c := range p.Choices {
				if c.Feasible && len(c.Actions) > 0 {
					strategies = append(strategies, c.Strategy)
				}
			}
			if len(p.Choices) == 0 && len(p.Actions) > 0 {
				strategies = []Strategy{""}
			}
			if len(strategies) == 0 {
				if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, s)); d != "" {
					t.Fatalf("planning changed the checkpoint:\n%s", d)
				}
				return
			}
			repaired = append(repaired, sc.Name)
			for _, st := range strategies {
				cycle(t, s, orig, popts, st)
			}
		})
	}
	for _, n := range mustRepair {
		if !slices.Contains(repaired, n) {
			t.Errorf("scenario %s produced no repair", n)
		}
	}
}

// repairable reports whether the scenario's plan (on Mem) changes files.
func repairable(t *testing.T, sc scenario.Scenario) bool {
	ctx := context.Background()
	m := storage.NewMem()
	if err := sc.WriteTo(ctx, m); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(ctx, m, Options{Planner: recovery.Options{SinkLatest: sc.SinkLatest}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Actions) > 0 {
		return true
	}
	for _, c := range p.Choices {
		if c.Feasible && len(c.Actions) > 0 {
			return true
		}
	}
	return false
}

// cycle runs one strategy on s and undoes it; s ends as orig.
func cycle(t *testing.T, s storage.Store, orig map[string]string, popts recovery.Options, st Strategy) {
	t.Helper()
	ctx := context.Background()
	name := string(st)
	if name == "" {
		name = "single"
	}
	t.Run(name, func(t *testing.T) {
		// doctor names every problem an action answers.
		cp, err := checkpoint.Load(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := diagnose(ctx, cp, popts)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPlan(ctx, s, Options{Planner: popts, Strategy: st})
		if err != nil {
			t.Fatal(err)
		}
		if p.Refused != "" || len(p.Actions) == 0 {
			t.Fatalf("plan refused or empty: %q", p.Refused)
		}
		for _, a := range p.Actions {
			if !rep.Has(a.Code) {
				t.Errorf("action on %s answers %s, which doctor does not report", a.Path, a.Code)
			}
		}
		if p.After.Failed() {
			t.Fatalf("the plan predicts a failed restart: %s", p.After.Verdict())
		}
		if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, s)); d != "" {
			t.Fatalf("planning changed the checkpoint:\n%s", d)
		}

		j, err := journal.Apply(ctx, s, p.JournalPlan(), execOpts())
		if err != nil {
			t.Fatal(err)
		}
		if j.State != journal.StateDone || len(j.Warnings) > 0 {
			t.Fatalf("journal state %s, warnings %q", j.State, j.Warnings)
		}
		if !journaltest.SameRestart(j.Verified, p.After) {
			t.Errorf("verified %q, predicted %q", j.Verified.Verdict(), p.After.Verdict())
		}
		// The restart resumes as predicted.
		if got := journaltest.ReplayNow(t, s, popts); !journaltest.SameRestart(got, p.After) {
			t.Errorf("replay says %q, the plan predicted %q", got.Verdict(), p.After.Verdict())
		}
		if l, err := journal.ReadLock(ctx, s); err != nil || l != nil {
			t.Errorf("lock after the repair: %+v, %v", l, err)
		}
		// A second run finds nothing to do.
		p2, err := NewPlan(ctx, s, Options{Planner: popts})
		if err != nil {
			t.Fatal(err)
		}
		if len(p2.Actions) > 0 || len(p2.Choices) > 0 {
			t.Errorf("second plan is not empty: %d actions, %d choices", len(p2.Actions), len(p2.Choices))
		}
		// Undo restores every byte.
		dirs := journaltest.RepairDirs(t, s)
		loc := journal.Location{Store: s, Dir: journal.RepairsDir + "/" + j.ID}
		if !slices.Contains(dirs, loc.Dir) {
			t.Fatalf("repair dir %s not in %v", loc.Dir, dirs)
		}
		u, err := journal.Undo(ctx, s, loc, execOpts())
		if err != nil {
			t.Fatal(err)
		}
		if u.State != journal.StateUndone {
			t.Errorf("state after undo: %s", u.State)
		}
		if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, s)); d != "" {
			t.Fatalf("undo is not byte-identical:\n%s", d)
		}
		// Undo twice is harmless; resume of an undone repair is refused.
		if _, err := journal.Undo(ctx, s, loc, execOpts()); err != nil {
			t.Errorf("second undo: %v", err)
		}
		if _, err := journal.Resume(ctx, s, loc, execOpts()); err == nil {
			t.Error("resume of an undone repair succeeded")
		}
		if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, s)); d != "" {
			t.Fatalf("after a second undo:\n%s", d)
		}
		if l, err := journal.ReadLock(ctx, s); err != nil || l != nil {
			t.Errorf("lock after undo: %+v, %v", l, err)
		}
	})
}
