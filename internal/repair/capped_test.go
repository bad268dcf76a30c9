package repair

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// countingStore counts the bytes read from it, by ReadFile and through Open.
type countingStore struct {
	storage.Store
	n atomic.Int64
}

func (c *countingStore) ReadFile(ctx context.Context, p string) ([]byte, error) {
	b, err := c.Store.ReadFile(ctx, p)
	c.n.Add(int64(len(b)))
	return b, err
}

func (c *countingStore) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	rc, err := c.Store.Open(ctx, p)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.TeeReader(rc, writerFunc(func(b []byte) { c.n.Add(int64(len(b))) })), rc}, nil
}

type writerFunc func([]byte)

func (f writerFunc) Write(b []byte) (int, error) { f(b); return len(b), nil }

// withMaxFileBytes sets logformat.MaxFileBytes (CKPT_MAX_FILE_BYTES) for one test.
func withMaxFileBytes(t *testing.T, n int64) {
	old := logformat.MaxFileBytes
	logformat.MaxFileBytes = n
	t.Cleanup(func() { logformat.MaxFileBytes = old })
}

// Every file repair reads to plan, digest or back up is read through the cap of
// logformat.MaxFileBytes: a leftover temporary offsets file of one huge line is refused after
// reading one byte past the cap, not read whole (a 1 GiB line cost 1-2 GiB of memory). Before,
// the plan read all 1 MiB and went ahead.
func TestRepairReadsAreCapped(t *testing.T) {
	ctx := context.Background()
	withMaxFileBytes(t, 4096)
	m := storage.NewMem()
	buildScenario(t, "commits-ahead", m)
	huge := append(bytes.Repeat([]byte("x"), 1<<20), '\n')
	if err := m.WriteFile(ctx, "offsets/.3.0f4c2a1e-5b6d-4e8f-9a0b-1c2d3e4f5a6b.tmp", huge); err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: m}
	_, err := NewPlan(ctx, cs, Options{})
	var le *logformat.Error
	if !errors.As(err, &le) || le.Kind != logformat.KindLineTooLong || !strings.Contains(err.Error(), "offsets/.3.0f4c2a1e-5b6d-4e8f-9a0b-1c2d3e4f5a6b.tmp") {
		t.Fatalf("plan with a 1 MiB leftover under a 4 KiB cap = %v, want the file refused as too large", err)
	}
	if n := cs.n.Load(); n > 64<<10 {
		t.Fatalf("the plan read %d bytes; the 1 MiB file must not be read whole", n)
	}
}

// Undo reads every backup through the same cap: a backup replaced by a huge file is refused
// (and nothing changes) without reading it whole.
func TestUndoBackupReadCapped(t *testing.T) {
	ctx := context.Background()
	m, j, loc := executed(t)
	withMaxFileBytes(t, 4096)
	repaired := snapshot(t, m)
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
	cs := &countingStore{Store: m}
	_, err := Undo(ctx, cs, Location{Store: cs, Dir: loc.Dir}, execOpts())
	var le *logformat.Error
	if !errors.As(err, &le) || le.Kind != logformat.KindLineTooLong {
		t.Fatalf("undo with a 1 MiB backup under a 4 KiB cap = %v, want it refused as too large", err)
	}
	if n := cs.n.Load(); n > 64<<10 {
		t.Fatalf("undo read %d bytes; the 1 MiB backup must not be read whole", n)
	}
	if d := diffSnapshots(repaired, snapshot(t, m)); d != "" {
		t.Fatalf("the refused undo changed the checkpoint:\n%s", d)
	}
}
