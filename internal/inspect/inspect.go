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
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

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
	// Dir is the sink log directory for KindFileSinkLog: "_spark_metadata", or "" when the
	// location is the log directory itself.
	Dir string
}

// NotFoundError says that a location holds neither a checkpoint nor a sink log.
type NotFoundError struct {
	URI string
	// Hint, when set, says what the location looks like instead.
	Hint string
}

// Error names the location and what was expected there.
func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("no checkpoint found at %s: expected offsets/, commits/ or metadata (or a file sink's %s/)", e.URI, SinkMetadataDir)
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// Detect decides what the location is from one listing: a checkpoint (offsets/, commits/ or a
// metadata file), a file sink output directory (_spark_metadata/), or a sink log directory
// itself (named _spark_metadata, or batch files whose latest holds sink entries). Anything else is
// a *NotFoundError.
func Detect(ctx context.Context, store storage.Store) (Target, error) {
	entries, err := store.List(ctx, "")
	if err != nil {
		return Target{}, err
	}
	base := uriBase(store.URI())
	if sinklog.Locate(store.URI()) == "" && len(entries) > 0 {
		return Target{Kind: KindFileSinkLog, Dir: ""}, nil
	}
	sink := false
	var latest string
	var latestID int64 = -1
	for _, e := range entries {
		switch name := path.Base(e.Path); {
		case e.IsDir && (name == "offsets" || name == "commits"):
			return Target{Kind: KindCheckpoint}, nil
		case !e.IsDir && name == "metadata":
			return Target{Kind: KindCheckpoint}, nil
		case e.IsDir && name == SinkMetadataDir:
			sink = true
		case !e.IsDir:
			if n := logformat.ParseName(name); (n.Kind == logformat.NameBatch || n.Kind == logformat.NameCompact) && n.Batch > latestID {
				latest, latestID = e.Path, n.Batch
			}
		}
	}
	if sink {
		return Target{Kind: KindFileSinkLog, Dir: SinkMetadataDir}, nil
	}
	nf := &NotFoundError{URI: store.URI()}
	if len(entries) == 0 {
		nf.Hint = "the location is empty or does not exist"
		return Target{}, nf
	}
	switch base {
	case "offsets", "commits", "state", "sources":
		nf.Hint = fmt.Sprintf("this looks like the %s/ directory of a checkpoint: pass the directory above it", base)
		return Target{}, nf
	}
	if latest != "" {
		ok, err := holdsSinkEntries(ctx, store, latest)
		if err != nil {
			return Target{}, err
		}
		if ok {
			return Target{Kind: KindFileSinkLog, Dir: ""}, nil
		}
	}
	return Target{}, nf
}

// holdsSinkEntries reads the first entry of a batch file: a renamed copy of a _spark_metadata
// directory is still a sink log when its entries carry a sink action.
func holdsSinkEntries(ctx context.Context, store storage.Store, file string) (bool, error) {
	rc, err := store.Open(ctx, file)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer rc.Close()
	r, err := logformat.NewSinkLogReader(file, rc)
	if err != nil {
		return false, nil
	}
	e, err := r.Next()
	return err == nil && (e.Action == "add" || e.Action == "delete"), nil
}

// uriBase is the last element of a path or URI, ignoring trailing separators.
func uriBase(uri string) string {
	uri = strings.TrimRight(uri, `/\`)
	if i := strings.LastIndexAny(uri, `/\`); i >= 0 {
		return uri[i+1:]
	}
	return uri
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
