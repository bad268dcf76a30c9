package inspect

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/fleet"
	"github.com/ckpt-dev/ckpt/internal/render"
)

// fleetRow is one checkpoint of `inspect --recursive`: what its listings show, nothing read.
type fleetRow struct {
	Location string `json:"location"`
	// Status: "unreadable" (Error says why), "gaps" (a batch id missing between the oldest and
	// the newest offsets file), "in-flight" (the latest offsets file has no commit), "committed",
	// or "empty" (no batch yet).
	Status        string `json:"status"`
	Error         string `json:"error,omitempty"`
	Batches       int    `json:"batches"`
	FirstOffsets  *int64 `json:"firstOffsets"`
	LatestOffsets *int64 `json:"latestOffsets"`
	LatestCommit  *int64 `json:"latestCommit"`
	rank          int
}

var inspectRank = map[string]int{"unreadable": 0, "gaps": 1, "in-flight": 2, "empty": 3, "committed": 4}

func runFleet(ctx context.Context, opts *Options) error {
	parent, err := opts.OpenStore(ctx, opts.Location)
	if err != nil {
		return err
	}
	rels, err := fleet.Find(ctx, parent, fleet.Options{})
	if err != nil {
		return err
	}
	if len(rels) == 0 {
		return cli.NoCheckpointBelow(ctx, parent, opts.Location)
	}
	rows := make([]fleetRow, 0, len(rels))
	unreadable := false
	for _, rel := range rels {
		row := summarizeOne(ctx, opts, fleet.Join(opts.Location, rel))
		unreadable = unreadable || row.Status == "unreadable"
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].rank < rows[j].rank })
	if opts.Output == render.FormatJSON {
		if err := render.JSON(opts.IO.Out, map[string]any{"parent": opts.Location, "checkpoints": rows}); err != nil {
			return err
		}
	} else {
		render.EscapeStrings(rows) // paths and messages from the listed checkpoints
		r := render.New(opts.IO)
		what := fmt.Sprintf("%d checkpoints", len(rows))
		if len(rows) == 1 {
			what = "1 checkpoint"
		}
		r.Println(r.Bold(what + " below " + opts.Location))
		t := render.Table{Headers: []string{"checkpoint", "status", "batches", "offsets", "latest commit"}}
		for _, row := range rows {
			status := row.Status
			switch status {
			case "unreadable", "gaps":
				status = r.Bad(status)
				if row.Error != "" {
					status += ": " + row.Error
				}
			case "in-flight":
				status = r.Warn(status)
			}
			t.Rows = append(t.Rows, []string{row.Location, status, strconv.Itoa(row.Batches), idRange(row.FirstOffsets, row.LatestOffsets), optInt(row.LatestCommit)})
		}
		r.Table(t)
	}
	if unreadable {
		return exitcode.Silent(exitcode.Failure)
	}
	return nil
}

func summarizeOne(ctx context.Context, opts *Options, loc string) fleetRow {
	row := fleetRow{Location: loc}
	store, err := opts.OpenStore(ctx, loc)
	if err == nil {
		var cp *checkpoint.Checkpoint
		if cp, err = checkpoint.Load(ctx, store); err == nil {
			ids := cp.Offsets.IDs()
			row.Batches = len(ids)
			if len(ids) > 0 {
				first, last := ids[0], ids[len(ids)-1]
				row.FirstOffsets, row.LatestOffsets = &first, &last
			}
			if c, ok := cp.Commits.Latest(); ok {
				row.LatestCommit = &c
			}
			switch {
			case len(ids) == 0:
				row.Status = "empty"
			case int64(len(ids)) != ids[len(ids)-1]-ids[0]+1:
				row.Status = "gaps"
			case row.LatestCommit == nil || *row.LatestCommit < *row.LatestOffsets:
				row.Status = "in-flight"
			default:
				row.Status = "committed"
			}
		}
	}
	if err != nil {
		row.Status, row.Error = "unreadable", err.Error()
	}
	row.rank = inspectRank[row.Status]
	return row
}

func idRange(a, b *int64) string {
	switch {
	case a == nil:
		return "-"
	case *a == *b:
		return strconv.FormatInt(*a, 10)
	}
	return fmt.Sprintf("%d-%d", *a, *b)
}

func optInt(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10)
}
