package journal

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func TestDirOf(t *testing.T) {
	for in, want := range map[string]string{
		"/c/_ckpt/repairs/X":                     "/c/_ckpt/repairs/X",
		"/c/_ckpt/repairs/X/":                    "/c/_ckpt/repairs/X",
		"/c/_ckpt/repairs/X/journal":             "/c/_ckpt/repairs/X",
		"/c/_ckpt/repairs/X/journal/000003.json": "/c/_ckpt/repairs/X",
		"s3://b/p/_ckpt/repairs/X/journal/":      "s3://b/p/_ckpt/repairs/X",
	} {
		if got := DirOf(in); got != want {
			t.Errorf("DirOf(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"/c/_ckpt/repairs/X":       "/c",
		"ck/_ckpt/repairs/X":       "ck",
		"_ckpt/repairs/X":          ".",
		"s3://b/p/_ckpt/repairs/X": "s3://b/p",
		"s3://b/_ckpt/repairs/X":   "s3://b",
		"/backups/X":               "",
	} {
		got, ok := CheckpointOf(in)
		if got != want || ok != (want != "") {
			t.Errorf("CheckpointOf(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// The newest journaltest.Snapshot that parses is the journal; a damaged newest one (edited by hand) falls
// back to the one before.
func TestRead(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	loc := Location{Store: m, Dir: "r"}
	if _, err := Read(ctx, loc); !errors.Is(err, ErrMissing) {
		t.Fatalf("empty: %v", err)
	}
	j := &Record{Version: Version, ID: "x", State: StatePlanned}
	if err := j.write(ctx, loc, journaltest.Now); err != nil {
		t.Fatal(err)
	}
	j.State = StateBackedUp
	if err := j.write(ctx, loc, journaltest.Now); err != nil {
		t.Fatal(err)
	}
	got, err := Read(ctx, loc)
	if err != nil || got.Seq != 2 || got.State != StateBackedUp {
		t.Fatalf("got %+v, %v", got, err)
	}
	if err := m.WriteFile(ctx, "r/journal/000003.json", []byte("{broken")); err != nil {
		t.Fatal(err)
	}
	got, err = Read(ctx, loc)
	if err != nil || got.Seq != 2 {
		t.Fatalf("with a broken newest snapshot: %+v, %v", got, err)
	}
	// Snapshots are never overwritten: writing seq 3 again fails rather than replacing it.
	if err := j.write(ctx, loc, journaltest.Now); err == nil {
		t.Fatal("a journaltest.Snapshot was overwritten")
	}
}

// Only the first journaltest.Snapshot holds the actions; the later ones record their states and write times,
// and Read puts the two together. Before version 3 every journaltest.Snapshot repeated every action
// (~16 MB a journaltest.Snapshot for a purge of 40,000 files).
func TestJournalProgressSnapshots(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	loc := Location{Store: m, Dir: "r"}
	j := &Record{Version: Version, ID: "x", State: StatePlanned}
	for _, p := range []string{"offsets/1", "offsets/2", "commits/1"} {
		j.Actions = append(j.Actions, Entry{Action: Action{Op: OpDelete, Path: p, Before: DigestOf([]byte(p)), Reason: strings.Repeat("why ", 50)},
			Backup: "files/" + p, State: ActionPending})
	}
	if err := j.write(ctx, loc, journaltest.Now); err != nil {
		t.Fatal(err)
	}
	first, _ := m.ReadFile(ctx, "r/journal/000001.json")
	j.State = StateApplying
	j.Actions[0].State, j.Actions[1].State = ActionDone, ActionApplying
	w := journaltest.Now.Add(time.Second)
	j.Actions[1].Written = &w
	if err := j.write(ctx, loc, journaltest.Now); err != nil {
		t.Fatal(err)
	}
	second, _ := m.ReadFile(ctx, "r/journal/000002.json")
	if strings.Contains(string(second), `"actions"`) || !strings.Contains(string(second), `"progress"`) || len(second) >= len(first)/2 {
		t.Fatalf("the second journaltest.Snapshot repeats the actions (%d bytes, the first %d):\n%s", len(second), len(first), second)
	}
	got, err := Read(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	if got.Seq != 2 || got.State != StateApplying || len(got.Actions) != 3 || got.Progress != nil {
		t.Fatalf("got %+v", got)
	}
	for i, want := range []ActionState{ActionDone, ActionApplying, ActionPending} {
		if got.Actions[i].State != want || got.Actions[i].Path != j.Actions[i].Path {
			t.Errorf("action %d: %s %s, want %s %s", i, got.Actions[i].Path, got.Actions[i].State, j.Actions[i].Path, want)
		}
	}
	if got.Actions[1].Written == nil || !got.Actions[1].Written.Equal(w) || got.Actions[0].Written != nil {
		t.Errorf("write times: %v %v", got.Actions[0].Written, got.Actions[1].Written)
	}
	// A journal read back continues with progress snapshots.
	got.State = StateApplied
	if err := got.write(ctx, loc, journaltest.Now); err != nil {
		t.Fatal(err)
	}
	if again, err := Read(ctx, loc); err != nil || again.Seq != 3 || again.State != StateApplied || len(again.Actions) != 3 {
		t.Fatalf("third: %+v, %v", again, err)
	}
}

// A version 2 journal (every journaltest.Snapshot holds the actions) written by the ckpt before is still read,
// and continued with version 3 snapshots.
func TestReadVersion2(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	loc := Location{Store: m, Dir: "r"}
	j := Record{Version: 2, ID: "x", State: StateApplying, Seq: 1}
	j.Actions = []Entry{{Action: Action{Op: OpDelete, Path: "offsets/1", Before: DigestOf([]byte("a"))}, Backup: "files/offsets/1", State: ActionApplying}}
	j.Binding = j.binding()
	data, _ := json.MarshalIndent(&j, "", "  ")
	if err := m.WriteFile(ctx, "r/journal/000001.json", data); err != nil {
		t.Fatal(err)
	}
	got, err := Read(ctx, loc)
	if err != nil || got.Version != 2 || len(got.Actions) != 1 {
		t.Fatalf("version 2: %+v, %v", got, err)
	}
	got.Actions[0].State = ActionDone
	if err := got.write(ctx, loc, journaltest.Now); err != nil {
		t.Fatal(err)
	}
	again, err := Read(ctx, loc)
	if err != nil || again.Version != Version || again.Actions[0].State != ActionDone {
		t.Fatalf("continued: %+v, %v", again, err)
	}
}
