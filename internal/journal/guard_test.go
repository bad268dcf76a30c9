package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// newestSnapshot returns the path and the parsed newest journal journaltest.Snapshot at loc.
func newestSnapshot(t *testing.T, loc Location) (string, map[string]any) {
	t.Helper()
	es := snapshotFiles(t, loc)
	return es[len(es)-1], parseSnapshot(t, loc, es[len(es)-1])
}

// firstSnapshot returns the path and the parsed first journal journaltest.Snapshot at loc: the one holding
// the actions.
func firstSnapshot(t *testing.T, loc Location) (string, map[string]any) {
	t.Helper()
	es := snapshotFiles(t, loc)
	return es[0], parseSnapshot(t, loc, es[0])
}

func snapshotFiles(t *testing.T, loc Location) []string {
	t.Helper()
	es, err := loc.Store.List(context.Background(), loc.journalDir())
	if err != nil || len(es) < 2 {
		t.Fatalf("journal: %v %v", es, err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Path)
	}
	return out
}

func parseSnapshot(t *testing.T, loc Location, p string) map[string]any {
	t.Helper()
	b, err := loc.Store.ReadFile(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// rewrite replaces the journaltest.Snapshot at p by doc (a hand edit: stores never overwrite, so delete first).
func rewrite(t *testing.T, m *storage.Mem, p string, doc map[string]any) {
	t.Helper()
	ctx := context.Background()
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteFile(ctx, p, b); err != nil {
		t.Fatal(err)
	}
}

// Undo only ever puts back what the repair changed: a journal edited by hand (an added write
// naming a live file, which undo would delete; a delete renamed onto a state file, which undo
// would create; either with its binding digest recomputed) is refused, and nothing changes.
// Before the digest chain, undo deleted offsets/0 and created state/0/0/1.delta.
func TestUndoRefusesEditedJournal(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, m *storage.Mem, j *Record, doc map[string]any)
	}{
		{"added write of a live file", func(t *testing.T, m *storage.Mem, j *Record, doc map[string]any) {
			live, _ := m.ReadFile(ctx, "offsets/0")
			acts := doc["actions"].([]any)
			doc["actions"] = append(acts, map[string]any{"op": "write", "path": "offsets/0", "data": live,
				"reason": "x", "sha256Before": nil, "sha256After": string(DigestOf(live)), "size": len(live), "state": "done"})
		}},
		{"delete renamed onto a state file", func(t *testing.T, m *storage.Mem, j *Record, doc map[string]any) {
			a := doc["actions"].([]any)[0].(map[string]any)
			a["path"] = "state/0/0/1.delta"
		}},
		{"delete renamed, backup too", func(t *testing.T, m *storage.Mem, j *Record, doc map[string]any) {
			a := doc["actions"].([]any)[0].(map[string]any)
			a["path"] = "state/0/0/1.delta"
			a["backup"] = "files/state/0/0/1.delta"
		}},
		{"added write, binding recomputed", func(t *testing.T, m *storage.Mem, j *Record, doc map[string]any) {
			live, _ := m.ReadFile(ctx, "offsets/0")
			forged := *j
			forged.Actions = append(append([]Entry(nil), j.Actions...), Entry{Action: Action{Op: OpWrite, Path: "offsets/0", Data: live, After: DigestOf(live), Size: int64(len(live))}, State: ActionDone})
			b, _ := json.Marshal(forged.Actions)
			var acts []any
			_ = json.Unmarshal(b, &acts)
			doc["actions"] = acts
			doc["binding"] = string(forged.binding())
		}},
	} {
		// The actions are in the first snapshot; the later ones record only their progress. An
		// edit of the first breaks the chain of the snapshots after it, and actions put into the
		// newest journaltest.Snapshot (in place of its progress) are not the actions its chain is bound to.
		for _, where := range []string{"first", "newest"} {
			t.Run(tc.name+" in the "+where+" snapshot", func(t *testing.T) {
				m, j, loc := executed(t)
				before := journaltest.Snapshot(t, m)
				p, doc := firstSnapshot(t, loc)
				tc.edit(t, m, j, doc)
				if where == "newest" {
					np, ndoc := newestSnapshot(t, loc)
					delete(ndoc, "progress")
					ndoc["actions"] = doc["actions"]
					if b, ok := doc["binding"]; ok {
						ndoc["binding"] = b
					}
					p, doc = np, ndoc
				}
				rewrite(t, m, p, doc)
				_, err := Undo(ctx, m, loc, execOpts())
				if !errors.Is(err, ErrForged) {
					t.Fatalf("undo of an edited journal = %v, want ErrForged", err)
				}
				if d := journaltest.DiffSnapshots(before, journaltest.Snapshot(t, m)); d != "" {
					t.Fatalf("the refused undo changed the checkpoint:\n%s", d)
				}
				if _, err := Resume(ctx, m, loc, execOpts()); !errors.Is(err, ErrForged) {
					t.Fatalf("resume of an edited journal = %v, want ErrForged", err)
				}
			})
		}
	}
	// A progress record that does not fit the actions is refused too.
	for name, edit := range map[string]func(pr map[string]any){
		"a state run counts more actions": func(pr map[string]any) {
			r := pr["states"].([]any)[0].(map[string]any)
			r["count"] = r["count"].(float64) + 1
		},
		"an unknown state": func(pr map[string]any) {
			pr["states"].([]any)[0].(map[string]any)["state"] = "gone"
		},
		"a write time out of range": func(pr map[string]any) {
			pr["written"] = []any{map[string]any{"index": 999, "time": journaltest.Now.Format(time.RFC3339)}}
		},
	} {
		t.Run("progress: "+name, func(t *testing.T) {
			m, _, loc := executed(t)
			p, doc := newestSnapshot(t, loc)
			edit(doc["progress"].(map[string]any))
			rewrite(t, m, p, doc)
			if _, err := Undo(ctx, m, loc, execOpts()); !errors.Is(err, ErrForged) {
				t.Fatalf("undo with edited progress = %v, want ErrForged", err)
			}
		})
	}
	// A journaltest.Snapshot added by hand (the chain of previous-journaltest.Snapshot digests breaks) is refused too.
	m, _, loc := executed(t)
	p, doc := newestSnapshot(t, loc)
	doc["seq"] = doc["seq"].(float64) + 1
	b, _ := json.Marshal(doc)
	next := strings.Replace(p, fmt.Sprintf("%06d", int(doc["seq"].(float64))-1), fmt.Sprintf("%06d", int(doc["seq"].(float64))), 1)
	if err := m.WriteFile(ctx, next, b); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(ctx, loc); !errors.Is(err, ErrForged) {
		t.Fatalf("a copied snapshot: %v, want ErrForged", err)
	}
}

// A resume or undo of a journal whose repair is still running (here: called while Apply holds
// the lock, between two of its changes) is refused, not run alongside it. Before, a lock with
// the same repair id was taken over without asking whether its holder was alive.
func TestUndoWhileRunningRefused(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	journaltest.BuildScenario(t, "commits-ahead", m)
	p, err := newPlan(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	var inner []error
	o := execOpts()
	o.Hook = func(point string) {
		if point != "changed" || len(inner) > 0 {
			return
		}
		dirs := journaltest.RepairDirs(t, m)
		loc := Location{Store: m, Dir: dirs[0]}
		_, uerr := Undo(ctx, m, loc, execOpts())
		_, rerr := Resume(ctx, m, loc, execOpts())
		inner = append(inner, uerr, rerr)
	}
	j, err := Apply(ctx, m, p, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(inner) != 2 {
		t.Fatal("the hook did not run")
	}
	for i, err := range inner {
		var locked *LockedError
		if !errors.As(err, &locked) || !locked.Running || !strings.Contains(err.Error(), "running now") {
			t.Errorf("%s while the repair runs = %v, want a LockedError for a running holder", []string{"undo", "resume"}[i], err)
		}
	}
	if j.State != StateDone {
		t.Errorf("the repair ended %s", j.State)
	}
}

// A lock whose holder is gone from this host and which wrote no journal (killed between taking
// the lock and writing the journal) is stale: the next command takes it over and says so. A
// lock whose journal exists names resume and undo; one without never does.
func TestStaleLock(t *testing.T) {
	ctx := context.Background()
	dead := journaltest.DeadPID(t)
	for _, tc := range []struct {
		name    string
		host    string
		journal bool
		ok      bool
		want    string
		notWant string
	}{
		{"dead, no journal", hostname(), false, true, "took over a stale repair lock", ""},
		{"dead, journal", hostname(), true, false, "ckpt repair resume", ""},
		{"elsewhere, no journal", "elsewhere", false, false, "wrote no journal", "ckpt repair resume"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := storage.NewMem()
			journaltest.BuildScenario(t, "commits-ahead", m)
			id := "20290101T000000Z-deadbeef"
			jl := Location{Store: m, Dir: RepairsDir + "/" + id}
			if tc.journal {
				j := &Record{Version: Version, ID: id, State: StatePlanned}
				if err := j.write(ctx, jl, journaltest.Now); err != nil {
					t.Fatal(err)
				}
			}
			l := Lock{ID: id, Journal: jl.URI(), Op: "repair", Host: tc.host, PID: dead, Owner: "killed"}
			b, _ := json.Marshal(l)
			if err := m.WriteFile(ctx, LockPath, b); err != nil {
				t.Fatal(err)
			}
			p, err := newPlan(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			j, err := Apply(ctx, m, p, execOpts())
			msg := fmt.Sprint(err)
			if j != nil {
				msg = strings.Join(j.Warnings, "\n")
			}
			if (err == nil) != tc.ok || !strings.Contains(msg, tc.want) || (tc.notWant != "" && strings.Contains(msg, tc.notWant)) {
				t.Fatalf("execute = %v (%s); want ok=%v, %q", err, msg, tc.ok, tc.want)
			}
		})
	}
}

// A result that is not as predicted is never a success: here another writer adds a batch after
// the changes and before the verification; the repair is rolled back and returns a
// MismatchError. Before, it printed "NOT as predicted" and succeeded.
func TestNotAsPredictedRolledBack(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	journaltest.BuildScenario(t, "commits-ahead", m)
	orig := journaltest.Snapshot(t, m)
	p, err := newPlan(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	o := execOpts()
	o.Hook = func(point string) {
		if point == "applied" {
			// Spark (or anything else) deletes the newest offsets file meanwhile.
			es, _ := m.List(ctx, "offsets")
			if err := m.Delete(ctx, es[len(es)-1].Path); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, err = Apply(ctx, m, p, o)
	var mm *MismatchError
	if !errors.As(err, &mm) || !mm.RolledBack {
		t.Fatalf("execute = %v, want a rolled-back MismatchError", err)
	}
	now := journaltest.Snapshot(t, m)
	for path, data := range orig {
		if strings.HasPrefix(path, "offsets/") {
			continue // the other writer's deletion stays: it is not the repair's to undo
		}
		if now[path] != data {
			t.Errorf("%s not restored", path)
		}
	}
	if l, _ := ReadLock(ctx, m); l != nil {
		t.Errorf("lock left: %+v", l)
	}
}

// Once one rename crosses devices, the files after it are still backed up before they go (a
// copy, then the delete): a file is never deleted without its backup.
func TestMoveCrossDeviceKeepsBackups(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	journaltest.BuildScenario(t, "commits-ahead", s)
	orig := journaltest.Snapshot(t, s)
	p, err := newPlan(ctx, s)
	if err != nil || len(p.Actions) < 2 {
		t.Fatalf("plan: %v, %d actions", err, len(p.Actions))
	}
	o := execOpts()
	o.Hook = func(point string) {
		if point == "applying" {
			crossDeviceForTest = true
		}
	}
	defer func() { crossDeviceForTest = false }()
	j, err := Apply(ctx, s, p, o)
	if err != nil {
		t.Fatal(err)
	}
	journaltest.NothingLost(t, s, orig)
	if _, err := Undo(ctx, s, Location{Store: s, Dir: RepairsDir + "/" + j.ID}, execOpts()); err != nil {
		t.Fatal(err)
	}
	if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, s)); d != "" {
		t.Fatalf("undo after cross-device moves:\n%s", d)
	}
}

// A backup already in place (an earlier run copied it) is never replaced by the rename: it must be
// the original, and then the file is only deleted; a backup with other bytes stops the run. Both
// with the rename that refuses to replace (renameat2) and with the check-then-rename fallback.
func TestMoveNeverReplacesBackup(t *testing.T) {
	ctx := context.Background()
	for _, fallback := range []bool{false, true} {
		for _, good := range []bool{true, false} {
			t.Run(fmt.Sprintf("fallback=%v/original=%v", fallback, good), func(t *testing.T) {
				dir := t.TempDir()
				s, err := storage.NewLocal(dir)
				if err != nil {
					t.Fatal(err)
				}
				journaltest.BuildScenario(t, "commits-ahead", s)
				orig := journaltest.Snapshot(t, s)
				p, err := newPlan(ctx, s)
				if err != nil || len(p.Actions) == 0 {
					t.Fatalf("plan: %v", err)
				}
				first := p.Actions[0].Path
				var planted string
				o := execOpts()
				o.Hook = func(point string) {
					if point != "applying" || planted != "" {
						return
					}
					noReplaceUnsupportedForTest = fallback
					planted = storage.Join(journaltest.RepairDirs(t, s)[0], "files", first)
					data := orig[first]
					if !good {
						data = "other bytes"
					}
					if err := s.WriteFile(ctx, planted, []byte(data)); err != nil {
						t.Fatal(err)
					}
				}
				defer func() { noReplaceUnsupportedForTest = false }()
				_, err = Apply(ctx, s, p, o)
				got, _ := s.ReadFile(ctx, planted)
				if good {
					if err != nil {
						t.Fatal(err)
					}
					if string(got) != orig[first] {
						t.Fatalf("backup %s = %q", planted, got)
					}
					journaltest.NothingLost(t, s, orig)
					return
				}
				if err == nil || !strings.Contains(err.Error(), "is not the original") {
					t.Fatalf("execute over a wrong backup = %v, want it refused", err)
				}
				if string(got) != "other bytes" {
					t.Fatalf("the backup was replaced: %q", got)
				}
				if now, _ := s.ReadFile(ctx, first); string(now) != orig[first] {
					t.Fatalf("%s was moved over the backup", first)
				}
			})
		}
	}
}
