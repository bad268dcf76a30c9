package repair

import (
	"context"
	"errors"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

func TestJournalLocation(t *testing.T) {
	for in, want := range map[string]string{
		"/c/_ckpt/repairs/X":                     "/c/_ckpt/repairs/X",
		"/c/_ckpt/repairs/X/":                    "/c/_ckpt/repairs/X",
		"/c/_ckpt/repairs/X/journal":             "/c/_ckpt/repairs/X",
		"/c/_ckpt/repairs/X/journal/000003.json": "/c/_ckpt/repairs/X",
		"s3://b/p/_ckpt/repairs/X/journal/":      "s3://b/p/_ckpt/repairs/X",
	} {
		if got := JournalLocation(in); got != want {
			t.Errorf("JournalLocation(%q) = %q, want %q", in, got, want)
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

// The newest snapshot that parses is the journal; a damaged newest one (edited by hand) falls
// back to the one before.
func TestReadJournal(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	loc := Location{Store: m, Dir: "r"}
	if _, err := ReadJournal(ctx, loc); !errors.Is(err, ErrNoJournal) {
		t.Fatalf("empty: %v", err)
	}
	j := &Journal{Version: JournalVersion, ID: "x", State: StatePlanned}
	if err := j.write(ctx, loc, testNow); err != nil {
		t.Fatal(err)
	}
	j.State = StateBackedUp
	if err := j.write(ctx, loc, testNow); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJournal(ctx, loc)
	if err != nil || got.Seq != 2 || got.State != StateBackedUp {
		t.Fatalf("got %+v, %v", got, err)
	}
	if err := m.WriteFile(ctx, "r/journal/000003.json", []byte("{broken")); err != nil {
		t.Fatal(err)
	}
	got, err = ReadJournal(ctx, loc)
	if err != nil || got.Seq != 2 {
		t.Fatalf("with a broken newest snapshot: %+v, %v", got, err)
	}
	// Snapshots are never overwritten: writing seq 3 again fails rather than replacing it.
	if err := j.write(ctx, loc, testNow); err == nil {
		t.Fatal("a snapshot was overwritten")
	}
}
