package repair

import (
	"context"
	"errors"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// TestFaultInjection fails the store on the k-th mutation of a repair, for every k, both before
// the mutation reaches the store and after (a lost acknowledgement). Each time: no file is lost,
// and the journal (when the run got far enough to write one) allows both undo, which restores
// the checkpoint byte for byte, and resume, which ends exactly where an unfailed run ends.
func TestFaultInjection(t *testing.T) {
	runFaults(t, faultCases, func(t *testing.T) storage.Store { return storage.NewMem() })
}

// TestFaultInjectionS3 runs two of the cases on S3, each attempt on fresh prefixes, so the journal,
// the backups and the lock go through real conditional PUTs and listings.
func TestFaultInjectionS3(t *testing.T) {
	client, bucket := storetest.S3Bucket(t)
	runFaults(t, faultCases[:2], func(t *testing.T) storage.Store {
		return storage.NewS3FromClient(client, bucket, storetest.RandomName("f-"))
	})
}

type faultCase struct {
	scenario string
	strategy Strategy
}

var faultCases = []faultCase{
	{"async-trap-0-3-7", StrategyCopyPrevious},   // one new file
	{"leftovers", ""},                            // temp and orphan checksum
	{"async-trap-0-3-7", StrategyDelete},         // 4 deletes, commits before offsets
	{"commits-ahead", ""},                        // commits beyond the offsets
	{"corrupt-latest-offsets-empty", ""},         // a corrupt latest file
	{"missing-previous-offsets", StrategyDelete}, // an orphan past a gap
}

func runFaults(t *testing.T, cases []faultCase, newStore func(t *testing.T) storage.Store) {
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.scenario+"/"+string(tc.strategy), func(t *testing.T) {
			base := newStore(t)
			journaltest.BuildScenario(t, tc.scenario, base)
			orig := journaltest.Snapshot(t, base)
			opts := Options{Strategy: tc.strategy}

			// An unfailed run: how many mutations, and where it ends.
			clean := storage.NewFaulty(journaltest.CopyStore(t, base, newStore))
			p, err := NewPlan(ctx, clean, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Actions) == 0 {
				t.Fatalf("no actions: %q", p.Refused)
			}
			if _, err := journal.Apply(ctx, clean, p.JournalPlan(), execOpts()); err != nil {
				t.Fatal(err)
			}
			n := int(clean.Mutations())
			final := journaltest.Snapshot(t, clean)
			t.Logf("%d actions, %d mutations per run", len(p.Actions), n)

			for k := 1; k <= n; k++ {
				for _, after := range []bool{false, true} {
					m := journaltest.CopyStore(t, base, newStore)
					f := storage.NewFaulty(m)
					if after {
						f.FailMutationAfter(k, nil)
					} else {
						f.FailMutation(k, nil)
					}
					p, err := NewPlan(ctx, f, opts)
					if err != nil {
						t.Fatal(err)
					}
					_, err = journal.Apply(ctx, f, p.JournalPlan(), execOpts())
					label := map[bool]string{false: "before", true: "after"}[after]
					if err != nil && !errors.Is(err, storage.ErrInjected) {
						t.Fatalf("k=%d %s: unexpected error: %v", k, label, err)
					}
					journaltest.NothingLost(t, m, orig)

					dirs := journaltest.RepairDirs(t, m)
					if len(dirs) == 0 {
						// Failed before the journal existed: nothing may have changed.
						if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, m)); d != "" {
							t.Fatalf("k=%d %s: no journal but the checkpoint changed:\n%s", k, label, d)
						}
						if l, _ := journal.ReadLock(ctx, m); l != nil {
							t.Errorf("k=%d %s: lock left without a journal", k, label)
						}
						continue
					}
					loc := func(s storage.Store) journal.Location { return journal.Location{Store: s, Dir: dirs[0]} }

					u := journaltest.CopyStore(t, m, newStore)
					if _, err := journal.Undo(ctx, u, loc(u), execOpts()); err != nil {
						t.Fatalf("k=%d %s: undo: %v", k, label, err)
					}
					if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, u)); d != "" {
						t.Fatalf("k=%d %s: undo is not byte-identical:\n%s", k, label, d)
					}
					if l, _ := journal.ReadLock(ctx, u); l != nil {
						t.Errorf("k=%d %s: lock left after undo", k, label)
					}

					r := journaltest.CopyStore(t, m, newStore)
					j, err := journal.Resume(ctx, r, loc(r), execOpts())
					if err != nil {
						t.Fatalf("k=%d %s: resume: %v", k, label, err)
					}
					if j.State != journal.StateDone {
						t.Errorf("k=%d %s: state after resume %s", k, label, j.State)
					}
					if d := journaltest.DiffSnapshots(final, journaltest.Snapshot(t, r)); d != "" {
						t.Fatalf("k=%d %s: resume does not end where an unfailed run ends:\n%s", k, label, d)
					}
					if got := journaltest.ReplayNow(t, r, recovery.Options{}); !journaltest.SameRestart(got, p.After) {
						t.Errorf("k=%d %s: after resume the restart is %q, predicted %q", k, label, got.Verdict(), p.After.Verdict())
					}
					if l, _ := journal.ReadLock(ctx, r); l != nil {
						t.Errorf("k=%d %s: lock left after resume", k, label)
					}
				}
			}
		})
	}
}
