package position

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// StrategySinkRewind names the sink half of a rewind in its journal (the sink's own store).
const StrategySinkRewind journal.Strategy = "rewind-sink"

// SinkRewind is the file sink half of a rewind: its log entries above N move into a backup in
// the sink's own store, with a journal `ckpt repair undo` reads like any other.
type SinkRewind struct {
	// Sink is the output directory (the store's root).
	Sink string `json:"sink"`
	// Entries are the log files moved; DataFiles the data files they added, left in place (no log
	// entry lists them any more, so readers of the sink do not see them; Spark writes new files
	// under new names when it re-runs the batches).
	Entries   []string         `json:"entries"`
	DataFiles []string         `json:"dataFiles"`
	Actions   []journal.Action `json:"actions"`
}

// JournalPlan is the sink half in the form journal.Apply applies (to the sink's store).
func (p *SinkRewind) JournalPlan() *journal.Plan {
	return &journal.Plan{Strategy: StrategySinkRewind, Actions: p.Actions}
}

// planSinkRewind lists the file sink log entries above n in sink (its output directory). A
// compaction file above n holds the entries of every batch up to it, so it cannot simply move:
// refused.
func planSinkRewind(ctx context.Context, sink storage.Store, n int64) (*SinkRewind, string, error) {
	es, err := sink.List(ctx, sinklog.Dir)
	if err != nil {
		return nil, "", err
	}
	sr := &SinkRewind{Sink: sink.URI(), Entries: []string{}, DataFiles: []string{}, Actions: []journal.Action{}}
	type file struct {
		id   int64
		path string
	}
	var files []file
	for _, e := range es {
		name := path.Base(e.Path)
		if e.IsDir {
			continue
		}
		if !journal.IsSinkLogFile(e.Path) || strings.HasSuffix(name, ".crc") {
			continue
		}
		nm := logformat.ParseName(strings.TrimSuffix(name, ".compact"))
		if nm.Kind != logformat.NameBatch || nm.Batch <= n {
			continue
		}
		if strings.HasSuffix(name, ".compact") {
			return nil, fmt.Sprintf("the file sink's log has the compaction file %s above batch %d: it holds the entries of every batch up to %d, and moving it would hide older output. Rewind to batch %d or later", e.Path, n, nm.Batch, nm.Batch), nil
		}
		files = append(files, file{nm.Batch, e.Path})
	}
	// Newest first, so a crash leaves a log without gaps.
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		data, err := sink.ReadFile(ctx, f.path)
		if err != nil {
			return nil, "", err
		}
		log, err := logformat.ParseSinkLog(f.path, data)
		if err != nil {
			return nil, "", err
		}
		for _, en := range log.Entries {
			if en.Action == "add" {
				sr.DataFiles = append(sr.DataFiles, en.Path)
			}
		}
		sr.Entries = append(sr.Entries, f.path)
		sr.Actions = append(sr.Actions, journal.Action{Op: journal.OpDelete, Path: f.path,
			Reason: fmt.Sprintf("file sink log entry of batch %d, above batch %d: the re-run writes it again", f.id, n)})
		for _, c := range es {
			if path.Base(c.Path) == "."+path.Base(f.path)+".crc" {
				sr.Actions = append(sr.Actions, journal.Action{Op: journal.OpDelete, Path: c.Path, Reason: "checksum of " + f.path + ", moved with it"})
			}
		}
	}
	for i := range sr.Actions {
		if err := journal.Fill(ctx, sink, &sr.Actions[i]); err != nil {
			return nil, "", err
		}
	}
	return sr, "", nil
}
