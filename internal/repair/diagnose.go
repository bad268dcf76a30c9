package repair

import (
	"context"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// diagnose runs doctor with the planner options of the repair, so that what repair answers is
// exactly what `ckpt doctor` reports for the same restart.
func diagnose(ctx context.Context, cp *checkpoint.Checkpoint, o recovery.Options) (*doctor.Report, error) {
	return doctor.Run(ctx, cp, doctor.Options{
		Mode:                o.Mode,
		SparkVersion:        o.SparkVersion,
		CommitFormatVersion: o.CommitFormatVersion,
		SinkLatest:          o.SinkLatest,
		SinkKind:            o.SinkKind,
		Delta:               o.Delta,
	})
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
