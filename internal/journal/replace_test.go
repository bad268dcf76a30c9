package journal

import (
	"context"
	"errors"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// OpReplace (`ckpt sink repair` of a damaged compaction file): a failure at every mutation,
// before or after it reaches the store, leaves a journal that Undo turns back into the damaged
// bytes and Resume into the rebuilt ones, including the state between the delete and the write.
func TestReplaceFaults(t *testing.T) {
	ctx := context.Background()
	const p = sinklog.Dir + "/19.compact"
	damaged, rebuilt := []byte("v1\n{\"path\":"), []byte("v1\n{\"path\":\"file:/out/part-0\",\"size\":1,\"isDir\":false,\"modificationTime\":1,\"blockReplication\":1,\"blockSize\":1,\"action\":\"add\"}")
	newStore := func(*testing.T) storage.Store { return storage.NewMem() }
	base := newStore(t)
	for path, data := range map[string][]byte{p: damaged, sinklog.Dir + "/20": []byte("v1"), "part-0": []byte("x")} {
		if err := base.WriteFile(ctx, path, data); err != nil {
			t.Fatal(err)
		}
	}
	orig := journaltest.Snapshot(t, base)
	plan := func(s storage.Store) *Plan {
		a := Action{Op: OpReplace, Path: p, Data: rebuilt, Reason: "rebuilt"}
		if err := Fill(ctx, s, &a); err != nil {
			t.Fatal(err)
		}
		return &Plan{Strategy: "sink-rebuild-compact", Actions: []Action{a}}
	}
	clean := storage.NewFaulty(journaltest.CopyStore(t, base, newStore))
	if _, err := Apply(ctx, clean, plan(clean), execOpts()); err != nil {
		t.Fatal(err)
	}
	if got, _ := clean.ReadFile(ctx, p); string(got) != string(rebuilt) {
		t.Fatalf("replaced: %q", got)
	}
	n := int(clean.Mutations())
	final := journaltest.Snapshot(t, clean)
	for k := 1; k <= n; k++ {
		for _, after := range []bool{false, true} {
			m := journaltest.CopyStore(t, base, newStore)
			f := storage.NewFaulty(m)
			if after {
				f.FailMutationAfter(k, nil)
			} else {
				f.FailMutation(k, nil)
			}
			_, err := Apply(ctx, f, plan(f), execOpts())
			if err != nil && !errors.Is(err, storage.ErrInjected) {
				t.Fatalf("k=%d after=%v: %v", k, after, err)
			}
			dirs := journaltest.RepairDirs(t, m)
			if len(dirs) == 0 {
				if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, m)); d != "" {
					t.Fatalf("k=%d: no journal but changed:\n%s", k, d)
				}
				continue
			}
			u := journaltest.CopyStore(t, m, newStore)
			if _, err := Undo(ctx, u, Location{Store: u, Dir: dirs[0]}, execOpts()); err != nil {
				t.Fatalf("k=%d after=%v: undo: %v", k, after, err)
			}
			if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, u)); d != "" {
				t.Fatalf("k=%d after=%v: undo is not byte-identical:\n%s", k, after, d)
			}
			r := journaltest.CopyStore(t, m, newStore)
			if _, err := Resume(ctx, r, Location{Store: r, Dir: dirs[0]}, execOpts()); err != nil {
				t.Fatalf("k=%d after=%v: resume: %v", k, after, err)
			}
			if d := journaltest.DiffSnapshots(final, journaltest.Snapshot(t, r)); d != "" {
				t.Fatalf("k=%d after=%v: resume differs from an unfailed run:\n%s", k, after, d)
			}
		}
	}
	// Replace is confined to a sink log's compaction files.
	for _, bad := range []string{"offsets/3", "metadata", sinklog.Dir + "/3"} {
		if err := checkAction(stores{cp: base}, Action{Op: OpReplace, Path: bad}); err == nil {
			t.Errorf("replace of %s accepted", bad)
		}
	}
}
