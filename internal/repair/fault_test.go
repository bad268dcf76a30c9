package repair

import (
	"context"
	"errors"
	"testing"

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

// copyStore copies every file of from (including _ckpt/) into a new store.
func copyStore(t *testing.T, from storage.Store, newStore func(t *testing.T) storage.Store) storage.Store {
	t.Helper()
	ctx := context.Background()
	to := newStore(t)
	es, err := from.Walk(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := from.ReadFile(ctx, e.Path)
		if err != nil {
			t.Fatal(err)
		}
		if err := to.WriteFile(ctx, e.Path, b); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

func runFaults(t *testing.T, cases []faultCase, newStore func(t *testing.T) storage.Store) {
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.scenario+"/"+string(tc.strategy), func(t *testing.T) {
			base := newStore(t)
			buildScenario(t, tc.scenario, base)
			orig := snapshot(t, base)
			opts := Options{Strategy: tc.strategy}

			// An unfailed run: how many mutations, and where it ends.
			clean := storage.NewFaulty(copyStore(t, base, newStore))
			p, err := NewPlan(ctx, clean, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Actions) == 0 {
				t.Fatalf("no actions: %q", p.Refused)
			}
			if _, err := Execute(ctx, clean, p, execOpts()); err != nil {
				t.Fatal(err)
			}
			n := int(clean.Mutations())
			final := snapshot(t, clean)
			t.Logf("%d actions, %d mutations per run", len(p.Actions), n)

			for k := 1; k <= n; k++ {
				for _, after := range []bool{false, true} {
					m := copyStore(t, base, newStore)
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
					_, err = Execute(ctx, f, p, execOpts())
					label := map[bool]string{false: "before", true: "after"}[after]
					if err != nil && !errors.Is(err, storage.ErrInjected) {
						t.Fatalf("k=%d %s: unexpected error: %v", k, label, err)
					}
					nothingLost(t, m, orig)

					dirs := repairDirs(t, m)
					if len(dirs) == 0 {
						// Failed before the journal existed: nothing may have changed.
						if d := diffSnapshots(orig, snapshot(t, m)); d != "" {
							t.Fatalf("k=%d %s: no journal but the checkpoint changed:\n%s", k, label, d)
						}
						if l, _ := ReadLock(ctx, m); l != nil {
							t.Errorf("k=%d %s: lock left without a journal", k, label)
						}
						continue
					}
					loc := func(s storage.Store) Location { return Location{Store: s, Dir: dirs[0]} }

					u := copyStore(t, m, newStore)
					if _, err := Undo(ctx, u, loc(u), execOpts()); err != nil {
						t.Fatalf("k=%d %s: undo: %v", k, label, err)
					}
					if d := diffSnapshots(orig, snapshot(t, u)); d != "" {
						t.Fatalf("k=%d %s: undo is not byte-identical:\n%s", k, label, d)
					}
					if l, _ := ReadLock(ctx, u); l != nil {
						t.Errorf("k=%d %s: lock left after undo", k, label)
					}

					r := copyStore(t, m, newStore)
					j, err := Resume(ctx, r, loc(r), execOpts())
					if err != nil {
						t.Fatalf("k=%d %s: resume: %v", k, label, err)
					}
					if j.State != StateDone {
						t.Errorf("k=%d %s: state after resume %s", k, label, j.State)
					}
					if d := diffSnapshots(final, snapshot(t, r)); d != "" {
						t.Fatalf("k=%d %s: resume does not end where an unfailed run ends:\n%s", k, label, d)
					}
					if got := replayNow(t, r, recovery.Options{}); !sameRestart(got, p.After) {
						t.Errorf("k=%d %s: after resume the restart is %q, predicted %q", k, label, got.Verdict(), p.After.Verdict())
					}
					if l, _ := ReadLock(ctx, r); l != nil {
						t.Errorf("k=%d %s: lock left after resume", k, label)
					}
				}
			}
		})
	}
}
