// Package inspect answers "what is in this checkpoint?": the query id, which batches the offset
// and commit logs hold, what the latest batch says, which sources and state stores there are, and
// what an interrupted write left behind. It also summarises a file sink's `_spark_metadata` log.
//
// It reads as little as it can (listings, the latest offsets and commit files, the small metadata
// files, one walk of state/) so that the first command a user runs on a large S3 checkpoint is
// quick. Results are plain data with JSON tags; internal/cmd/inspect renders them. A corrupt file
// never aborts an inspection: it is reported as a Problem and the rest is still read. Only I/O
// failures are errors.
package inspect

import (
	"context"
	"errors"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Kind names what a location holds; it is the "kind" field of every JSON document.
type Kind string

// The kinds of location inspect understands, and the kinds of its other documents.
const (
	KindCheckpoint  Kind = "checkpoint"
	KindFileSinkLog Kind = "file-sink-log"
	KindBatches     Kind = "batches"
	KindBatch       Kind = "batch"
)

// SinkMetadataDir is the file sink's log directory name (sinklog.Dir).
const SinkMetadataDir = sinklog.Dir

// Target is the result of Detect.
type Target struct {
	Kind Kind
	// Location is what checkpoint.Detect found: checkpoint.LoadAt reuses its root listing.
	Location *checkpoint.Location
	// Dir is the sink log directory for KindFileSinkLog: "_spark_metadata", or "" when the
	// location is the log directory itself.
	Dir string
}

// Detect decides what the location is, with checkpoint.Detect (the one rule every command
// applies): a checkpoint, a file sink output directory (_spark_metadata/), or a sink log directory
// itself (named _spark_metadata, or batch files whose latest holds sink entries). Anything else is
// a *checkpoint.NotCheckpointError saying what the location holds; with allowEmpty an empty or
// unrelated directory is inspected as a checkpoint that has not started.
func Detect(ctx context.Context, store storage.Store, allowEmpty bool) (Target, error) {
	loc, err := checkpoint.Detect(ctx, store)
	if err != nil {
		return Target{}, err
	}
	switch loc.Kind {
	case checkpoint.KindCheckpoint:
		return Target{Kind: KindCheckpoint, Location: loc}, nil
	case checkpoint.KindSinkOutput:
		return Target{Kind: KindFileSinkLog, Dir: SinkMetadataDir}, nil
	case checkpoint.KindSinkLog:
		return Target{Kind: KindFileSinkLog, Dir: ""}, nil
	case checkpoint.KindEmpty, checkpoint.KindUnrelated:
		if allowEmpty {
			return Target{Kind: KindCheckpoint, Location: loc}, nil
		}
	}
	return Target{}, &checkpoint.NotCheckpointError{Location: loc, Command: "ckpt inspect", AllowEmptyFlag: true}
}

// Problem is a file that could not be parsed. Inspect reports it and carries on, as a person
// reading the directory would.
type Problem struct {
	// File is the path relative to the location.
	File string `json:"file"`
	// Line is 1-based; 0 when the problem is the whole file.
	Line int `json:"line"`
	// Kind is logformat's stable classification ("malformed-version", "bad-json", ...).
	Kind string `json:"kind"`
	// Expected says what should have been there; Got quotes what was.
	Expected string `json:"expected"`
	Got      string `json:"got"`
	// Spark is the message Spark raises reading this file, when it has one.
	Spark string `json:"spark,omitempty"`
	// Message is the whole error as one line.
	Message string `json:"message"`
}

// asProblem converts a parse error to a Problem. Errors that are not parse errors (I/O) return
// nil: the caller must fail on those rather than report them as content.
func asProblem(err error) *Problem {
	var fe *logformat.Error
	if !errors.As(err, &fe) {
		return nil
	}
	return &Problem{
		File:     fe.File,
		Line:     fe.Line,
		Kind:     fe.Kind.String(),
		Expected: fe.Expected,
		Got:      fe.Got,
		Spark:    fe.Spark,
		Message:  fe.Error(),
	}
}

// FormatTime renders a Spark epoch-millisecond timestamp as RFC 3339 in UTC with milliseconds,
// the form Spark's own logs and UI use.
func FormatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

func ptr[T any](v T) *T { return &v }
