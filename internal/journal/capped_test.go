package journal

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Undo reads every backup through the same cap: a backup replaced by a huge file is refused
// (and nothing changes) without reading it whole.
func TestUndoBackupReadCapped(t *testing.T) {
	ctx := context.Background()
	m, j, loc := executed(t)
	journaltest.WithMaxFileBytes(t, 4096)
	repaired := journaltest.Snapshot(t, m)
	var backup string
	for _, a := range j.Actions {
		if a.Backup != "" {
			backup = storage.Join(loc.Dir, a.Backup)
			break
		}
	}
	if backup == "" {
		t.Fatal("no backup")
	}
	if err := m.Delete(ctx, backup); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteFile(ctx, backup, bytes.Repeat([]byte("y"), 1<<20)); err != nil {
		t.Fatal(err)
	}
	cs := &journaltest.CountingStore{Store: m}
	_, err := Undo(ctx, cs, Location{Store: cs, Dir: loc.Dir}, execOpts())
	var le *logformat.Error
	if !errors.As(err, &le) || le.Kind != logformat.KindLineTooLong {
		t.Fatalf("undo with a 1 MiB backup under a 4 KiB cap = %v, want it refused as too large", err)
	}
	if n := cs.N.Load(); n > 64<<10 {
		t.Fatalf("undo read %d bytes; the 1 MiB backup must not be read whole", n)
	}
	if d := journaltest.DiffSnapshots(repaired, journaltest.Snapshot(t, m)); d != "" {
		t.Fatalf("the refused undo changed the checkpoint:\n%s", d)
	}
}
