package purge

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/position"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// purge --keep and rewind --to-batch planned on the same checkpoint and executed at once: their
// actions are disjoint (batches below 200, batches above 199), so each one's files are as its
// plan saw them, and before the whole prediction was checked under the lock both went ahead and
// left a checkpoint with no offsets (issue 26). Now exactly one succeeds and the checkpoint
// restarts as that one predicted. Fixed seed, bounded count.
func TestPurgeRewindRace(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(26, 1))
	for round := range 4 {
		s := build(t, 300, 300)
		pp, err := NewPlan(ctx, s, Options{Keep: 100})
		if err != nil {
			t.Fatal(err)
		}
		to := int64(199)
		rp, err := position.PlanRewind(ctx, s, position.RewindOptions{ToBatch: &to})
		if err != nil || rp.Refused != "" {
			t.Fatalf("rewind plan: %v %s", err, rp.Refused)
		}
		plans := []*journal.Plan{pp.JournalPlan(), rp.JournalPlan()}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		delay := time.Duration(rng.IntN(2000)) * time.Microsecond
		for i := range plans {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if i == round%2 {
					time.Sleep(delay)
				}
				// A command that finds the lock held tries again (as a person or a script
				// would): it then runs after the other, on the plan made before it.
				for try := 0; try < 2000; try++ {
					_, errs[i] = journal.Apply(ctx, s, plans[i], journal.Options{Tool: "test"})
					var locked *journal.LockedError
					if !errors.As(errs[i], &locked) {
						break
					}
					time.Sleep(time.Millisecond)
				}
			}()
		}
		close(start)
		wg.Wait()
		ok := 0
		var winner *journal.Plan
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
				winner = plans[i]
			case errors.Is(err, journal.ErrChanged):
			default:
				t.Fatalf("round %d: plan %d: %v", round, i, err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d of the two changes went ahead (%v)", round, ok, errs)
		}
		cp, err := checkpoint.Load(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := recovery.Plan(ctx, cp, recovery.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Verdict() != winner.After.Verdict() {
			t.Fatalf("round %d: the checkpoint restarts %q, the change that went ahead predicted %q", round, got.Verdict(), winner.After.Verdict())
		}
	}
}
