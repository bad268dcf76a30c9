package doctor

import (
	"context"
	"slices"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// doctor --deep reads every offsets and commits file capped: one over logformat.MaxFileBytes is
// a corrupt log file, read no further than the limit. Before, --deep read it whole (1 GiB for a
// 1 GiB line).
func TestDeepCapsLogFiles(t *testing.T) {
	defer func(n int64) { logformat.MaxFileBytes = n }(logformat.MaxFileBytes)
	logformat.MaxFileBytes = 1 << 20
	ctx := context.Background()
	mem := storage.NewMem()
	b := scenario.NewBuilder("deepcap").Metadata()
	b.OffsetsRange(0, 9, func(id int64) []string { return []string{scenario.Kafka("events", id, 2)} })
	b.Commits(0, 9)
	if err := b.WriteTo(ctx, mem); err != nil {
		t.Fatal(err)
	}
	st := &storetest.Endless{Store: mem, Path: "offsets/3", T: t}
	cp, err := checkpoint.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, cp, Options{Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	f := findCode(rep, CodeCorruptLogFile)
	if f == nil || f.Path != "offsets/3" && !slices.Contains(f.Files, "offsets/3") {
		t.Errorf("no %s naming offsets/3: %+v", CodeCorruptLogFile, rep.Findings)
	}
	if n := st.Read(); n > logformat.MaxFileBytes+64<<10 {
		t.Errorf("read %d bytes of offsets/3, limit %d", n, logformat.MaxFileBytes)
	}
}
