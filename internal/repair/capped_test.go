package repair

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Every file repair reads to plan, digest or back up is read through the cap of
// logformat.MaxFileBytes: a leftover temporary offsets file of one huge line is refused after
// reading one byte past the cap, not read whole (a 1 GiB line cost 1-2 GiB of memory). Before,
// the plan read all 1 MiB and went ahead.
func TestRepairReadsAreCapped(t *testing.T) {
	ctx := context.Background()
	journaltest.WithMaxFileBytes(t, 4096)
	m := storage.NewMem()
	journaltest.BuildScenario(t, "commits-ahead", m)
	huge := append(bytes.Repeat([]byte("x"), 1<<20), '\n')
	if err := m.WriteFile(ctx, "offsets/.3.0f4c2a1e-5b6d-4e8f-9a0b-1c2d3e4f5a6b.tmp", huge); err != nil {
		t.Fatal(err)
	}
	cs := &journaltest.CountingStore{Store: m}
	_, err := NewPlan(ctx, cs, Options{})
	var le *logformat.Error
	if !errors.As(err, &le) || le.Kind != logformat.KindLineTooLong || !strings.Contains(err.Error(), "offsets/.3.0f4c2a1e-5b6d-4e8f-9a0b-1c2d3e4f5a6b.tmp") {
		t.Fatalf("plan with a 1 MiB leftover under a 4 KiB cap = %v, want the file refused as too large", err)
	}
	if n := cs.N.Load(); n > 64<<10 {
		t.Fatalf("the plan read %d bytes; the 1 MiB file must not be read whole", n)
	}
}
