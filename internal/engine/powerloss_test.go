package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// The states a power loss can leave on a local checkpoint, given what the log writer makes
// durable (docs/design.md, "Durability of local writes"): the newest commit, the newest
// offsets file with it (offsets/N's name is durable before commits/N's, and before any sink
// output that outlives the process), and the newest purge's deletes may be undone, in any
// combination. Each state restarts like a process crash would: nothing lost, batch 9
// re-run only when its commit vanished, the reappeared files purged by the restart's first
// purge, and the checkpoint conformant.
func TestPowerLossStates(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "p", Partitions: 1})
	produce(t, b.Addr(), "p", 0, 0, 12)
	q := kafkaQuery(b.Addr(), "subscribe=p", "maxOffsetsPerTrigger=1")
	q.Trigger = "availableNow"
	q.Conf = map[string]string{query.ConfMinBatchesToRetain: "3"}
	ctx := context.Background()
	// The files of batch 5 as they were before batch 9's purge deleted them.
	base := storage.NewMem()
	if _, err := runQuery(t, ctx, resolve(t, q), base, runOpts{sink: &collectSink{}, max: 6}); err != nil {
		t.Fatal(err)
	}
	old := map[string][]byte{}
	for _, p := range []string{"offsets/5", "commits/5"} {
		data, err := base.ReadFile(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		old[p] = data
	}
	for _, tc := range []struct {
		name      string
		reappear  []string // deletes of the last purge undone
		lostCommt bool     // commits/9 lost
		lostOffs  bool     // offsets/9 lost (with its commit)
		rerun     bool
	}{
		{"purge-undone", []string{"offsets/5", "commits/5"}, false, false, false},
		{"offsets-delete-undone", []string{"offsets/5"}, false, false, false},
		{"commits-delete-undone", []string{"commits/5"}, false, false, false},
		{"commit-lost", nil, true, false, true},
		{"commit-lost-purge-undone", []string{"offsets/5", "commits/5"}, true, false, true},
		{"offsets-lost", nil, true, true, false},
		{"offsets-lost-purge-undone", []string{"offsets/5", "commits/5"}, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := storage.NewMem()
			first := &collectSink{}
			if _, err := runQuery(t, ctx, resolve(t, q), store, runOpts{sink: first, max: 10}); err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.reappear {
				if err := store.WriteFile(ctx, p, old[p]); err != nil {
					t.Fatal(err)
				}
			}
			if tc.lostCommt {
				if err := store.Delete(ctx, "commits/9"); err != nil {
					t.Fatal(err)
				}
			}
			if tc.lostOffs {
				if err := store.Delete(ctx, "offsets/9"); err != nil {
					t.Fatal(err)
				}
			}
			second := &collectSink{}
			st, err := runQuery(t, ctx, resolve(t, q), store, runOpts{sink: second})
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Reran != nil && *st.Reran == 9; got != tc.rerun {
				t.Errorf("reran %v, want batch 9 re-run: %v", st.Reran, tc.rerun)
			}
			all := append(first.values(), second.values()...)
			slices.Sort(all)
			all = slices.Compact(all)
			if want := expectValues([]string{"p"}, 1, 0, 12); !slices.Equal(all, sorted(want)) {
				t.Errorf("records %v, want %v", all, want)
			}
			cp, err := checkpoint.Load(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(cp.Offsets.IDs()) != "[8 9 10 11]" || fmt.Sprint(cp.Commits.IDs()) != "[8 9 10 11]" {
				t.Errorf("offsets %v commits %v, want [8 9 10 11] both", cp.Offsets.IDs(), cp.Commits.IDs())
			}
			checkConformance(t, store, nil)
		})
	}
}
