package lag

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// DeltaLag is how far one Delta source of a query is behind its table (`ckpt lag --delta-table`).
type DeltaLag struct {
	Source   int    `json:"source"`
	Location string `json:"location"`
	TableID  string `json:"tableId"`
	// LatestVersion is the table's newest version.
	LatestVersion int64 `json:"latestVersion"`
	// CommittedBatch is the latest committed batch, whose end offset is Committed; nil when
	// no batch committed.
	CommittedBatch *int64                       `json:"committedBatch"`
	Committed      *logformat.DeltaSourceOffset `json:"committed"`
	// InFlight is the end offset of a batch planned but not committed (offsets/L, L > C).
	InFlight *logformat.DeltaSourceOffset `json:"inFlight"`
	// VersionsBehind is LatestVersion minus the committed reservoirVersion, plus one when the
	// committed offset is before every change of its version (recovery.DeltaVersionsBehind);
	// nil without a committed Delta offset.
	VersionsBehind *int64 `json:"versionsBehind"`
	// Status is the planner's verdict on the table (recovery.DeltaVerdict.Status): "ok",
	// "delta-table-replaced", "delta-versions-expired", ...
	Status  string `json:"status"`
	Message string `json:"message"`
}

// DeltaReport is the lag of one checkpoint's Delta sources.
type DeltaReport struct {
	Checkpoint string     `json:"checkpoint"`
	Sources    []DeltaLag `json:"sources"`
}

// ComputeDelta measures each table's lag from the checkpoint's committed position and asks the
// planner (recovery.Plan with Options.Delta) whether the restart can still read it.
func ComputeDelta(ctx context.Context, cp *checkpoint.Checkpoint, location string, tables []recovery.DeltaTable, popts recovery.Options) (*DeltaReport, error) {
	popts.Delta = tables
	res, err := recovery.Plan(ctx, cp, popts)
	if err != nil {
		return nil, err
	}
	rep := &DeltaReport{Checkpoint: location, Sources: []DeltaLag{}}
	C, hasC := cp.Commits.Latest()
	L, hasL := cp.Offsets.Latest()
	for i, dt := range tables {
		d := DeltaLag{Source: dt.Source, Location: dt.Table.Location, TableID: dt.Table.ID, LatestVersion: dt.Table.Latest}
		if hasC {
			d.CommittedBatch = &C
			if d.Committed, err = deltaOffset(ctx, cp, C, dt.Source); err != nil {
				return nil, err
			}
			if d.Committed != nil {
				n := recovery.DeltaVersionsBehind(*d.Committed, dt.Table.Latest)
				d.VersionsBehind = &n
			}
		}
		if hasL && (!hasC || L > C) {
			if d.InFlight, err = deltaOffset(ctx, cp, L, dt.Source); err != nil {
				return nil, err
			}
		}
		if i < len(res.Delta) {
			d.Status, d.Message = res.Delta[i].Status, res.Delta[i].Message
		}
		if d.Status == recovery.ReasonDeltaTableReplaced {
			d.VersionsBehind = nil // the versions of another table mean nothing
		}
		rep.Sources = append(rep.Sources, d)
	}
	return rep, nil
}

// deltaOffset reads source i's Delta offset from offsets/id; nil when the file is missing or
// unreadable (doctor reports those) or the line is not a Delta offset.
func deltaOffset(ctx context.Context, cp *checkpoint.Checkpoint, id int64, i int) (*logformat.DeltaSourceOffset, error) {
	seq, err := cp.ReadOffsets(ctx, id)
	var le *logformat.Error
	if errors.Is(err, fs.ErrNotExist) || errors.As(err, &le) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("offsets/%d: %w", id, err)
	}
	if i >= len(seq.Sources) || seq.Sources[i].Void {
		return nil, nil
	}
	o, err := logformat.ParseDeltaSourceOffset(cp.Offsets.Path(id), seq.Sources[i].JSON)
	if err != nil {
		return nil, nil
	}
	return &o, nil
}
