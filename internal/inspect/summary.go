package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Summary is `ckpt inspect <checkpoint>`: everything about a checkpoint that one listing per
// directory and a handful of small reads can tell.
type Summary struct {
	Kind Kind   `json:"kind"` // always "checkpoint"
	URI  string `json:"uri"`
	// QueryID is the id in the root metadata file; nil when the file is missing or corrupt
	// (Metadata says which).
	QueryID  *string  `json:"queryId"`
	Metadata Metadata `json:"metadata"`
	Offsets  LogInfo  `json:"offsets"`
	Commits  LogInfo  `json:"commits"`
	// LatestBatch is the newest offsets file, the batch a restart starts from; nil when offsets/
	// is empty.
	LatestBatch *BatchInfo `json:"latestBatch"`
	// LatestCommit is the newest commits file; nil when commits/ is empty.
	LatestCommit *CommitInfo `json:"latestCommit"`
	// Sources describes each source index, from the newest readable offsets file and sources/.
	Sources []Source `json:"sources"`
	// SourcesBatch is the offsets file Sources was read from: the latest, or the newest
	// readable one before it when the latest is corrupt; nil when there is none.
	SourcesBatch *int64    `json:"sourcesBatch"`
	State        State     `json:"state"`
	Leftovers    Leftovers `json:"leftovers"`
	// Problems lists every file that could not be parsed, in the order it was read.
	Problems []Problem `json:"problems"`
}

// Metadata is the state of the root metadata file.
type Metadata struct {
	// Status is "ok", "missing" or "corrupt". A missing file makes Spark start the query under
	// a new id (or, since SPARK-55058, refuse to start).
	Status  string   `json:"status"`
	Problem *Problem `json:"problem,omitempty"`
}

// LogInfo is the listing of one batch log directory.
type LogInfo struct {
	Dir string `json:"dir"`
	// Count is len(Batches).
	Count int `json:"count"`
	// Batches are the ids with a batch file, ascending.
	Batches []int64 `json:"batches"`
	// Latest is the highest id; nil for an empty log.
	Latest *int64 `json:"latest"`
	// Ranges are Batches compressed into runs; Gaps are the holes between them.
	Ranges []Range `json:"ranges"`
	Gaps   []Range `json:"gaps"`
}

func newLogInfo(l *checkpoint.Log) LogInfo {
	ids := l.IDs()
	if ids == nil {
		ids = []int64{}
	}
	li := LogInfo{Dir: l.Dir, Count: len(ids), Batches: ids, Ranges: Ranges(ids)}
	li.Gaps = Gaps(li.Ranges)
	if id, ok := l.Latest(); ok {
		li.Latest = ptr(id)
	}
	return li
}

// BatchInfo is one offsets file, parsed.
type BatchInfo struct {
	ID int64 `json:"id"`
	// Committed reports whether commits/<id> exists.
	Committed bool `json:"committed"`
	// Version is the file's header version ("v1" is 1).
	Version int `json:"version"`
	// WatermarkMs and TimestampMs come from the metadata line; nil when the file has none.
	WatermarkMs *int64 `json:"watermarkMs"`
	TimestampMs *int64 `json:"timestampMs"`
	// Time is TimestampMs in RFC 3339, UTC, with milliseconds.
	Time string `json:"time,omitempty"`
	// Conf is the session conf Spark restores on restart, in the file's key order.
	Conf Conf `json:"conf"`
	// Sources are the offset lines as JSON values, null for "-" (no offset yet).
	Sources []json.RawMessage `json:"sources"`
	// Problem is set when the file is corrupt; the other fields are then empty.
	Problem *Problem `json:"problem,omitempty"`
}

func newBatchInfo(id int64, committed bool, seq *logformat.OffsetSeq, err error) *BatchInfo {
	b := &BatchInfo{ID: id, Committed: committed, Conf: Conf{}, Sources: []json.RawMessage{}}
	if err != nil {
		b.Problem = asProblem(err)
		return b
	}
	b.Version = seq.Version
	if m := seq.Metadata; m != nil {
		b.WatermarkMs = ptr(m.BatchWatermarkMs)
		b.TimestampMs = ptr(m.BatchTimestampMs)
		b.Time = FormatTime(m.BatchTimestampMs)
		for _, kv := range m.Conf {
			b.Conf = append(b.Conf, ConfEntry{Key: kv.Key, Value: kv.Value})
		}
	}
	for _, s := range seq.Sources {
		b.Sources = append(b.Sources, rawJSON(s.JSON, s.Void))
	}
	return b
}

// CommitInfo is one commits file, parsed.
type CommitInfo struct {
	ID      int64 `json:"id"`
	Version int   `json:"version"`
	// NextBatchWatermarkMs is the watermark the next batch starts with; nil when the file does
	// not set it (Spark then uses 0).
	NextBatchWatermarkMs *int64 `json:"nextBatchWatermarkMs"`
	// StateUniqueIDs are the state checkpoint ids of checkpoint format v2 (commit log v2+),
	// operator -> [partition][store] -> id; null when absent.
	StateUniqueIDs json.RawMessage `json:"stateUniqueIds"`
	Problem        *Problem        `json:"problem,omitempty"`
}

func newCommitInfo(id int64, c *logformat.Commit, err error) *CommitInfo {
	ci := &CommitInfo{ID: id, StateUniqueIDs: json.RawMessage("null")}
	if err != nil {
		ci.Problem = asProblem(err)
		return ci
	}
	ci.Version = c.Version
	if c.HasNextBatchWatermark {
		ci.NextBatchWatermarkMs = ptr(c.NextBatchWatermarkMs)
	}
	if len(c.StateUniqueIDs) > 0 {
		ci.StateUniqueIDs = rawJSON(string(c.StateUniqueIDs), false)
	}
	return ci
}

// maxFallback bounds how far back Summarize looks for a readable offsets file when the latest is
// corrupt: enough for a few bad files, never a scan of the whole log.
const maxFallback = 10

// Summarize inspects the checkpoint in store. It fails only when something cannot be read (an
// I/O error naming the file); unparsable files become Problems.
func Summarize(ctx context.Context, store storage.Store) (*Summary, error) {
	cp, err := checkpoint.Load(ctx, store)
	if err != nil {
		return nil, err
	}
	return SummarizeCheckpoint(ctx, cp)
}

// SummarizeCheckpoint is Summarize of a checkpoint already loaded (checkpoint.LoadAt), so that
// a command that also reads the position lists the checkpoint once.
func SummarizeCheckpoint(ctx context.Context, cp *checkpoint.Checkpoint) (*Summary, error) {
	store := cp.Store
	s := &Summary{
		Kind:     KindCheckpoint,
		URI:      store.URI(),
		Offsets:  newLogInfo(cp.Offsets),
		Commits:  newLogInfo(cp.Commits),
		Sources:  []Source{},
		Problems: []Problem{},
	}
	report := func(p *Problem) {
		if p != nil {
			s.Problems = append(s.Problems, *p)
		}
	}

	// The query id.
	s.Metadata.Status = "missing"
	if cp.HasMetadata() {
		m, err := cp.ReadMetadata(ctx)
		switch {
		case err == nil:
			s.Metadata.Status = "ok"
			s.QueryID = ptr(m.ID)
		case asProblem(err) != nil:
			s.Metadata.Status = "corrupt"
			s.Metadata.Problem = asProblem(err)
			report(s.Metadata.Problem)
		case errors.Is(err, fs.ErrNotExist):
			// Deleted since the listing: report what is there now.
		default:
			return nil, err
		}
	}

	// The latest batch, and the newest readable offsets for the sources.
	var sourcesSeq *logformat.OffsetSeq
	if id, ok := cp.Offsets.Latest(); ok {
		seq, err := cp.ReadOffsets(ctx, id)
		if err != nil && asProblem(err) == nil {
			return nil, err
		}
		s.LatestBatch = newBatchInfo(id, cp.Commits.Has(id), seq, err)
		report(s.LatestBatch.Problem)
		if err == nil {
			sourcesSeq, s.SourcesBatch = seq, ptr(id)
		}
		for try := 0; sourcesSeq == nil && try < maxFallback; try++ {
			prev, ok := cp.Offsets.Prev(id)
			if !ok {
				break
			}
			id = prev
			seq, err := cp.ReadOffsets(ctx, id)
			if err != nil {
				if asProblem(err) == nil {
					return nil, err
				}
				report(asProblem(err))
				continue
			}
			sourcesSeq, s.SourcesBatch = seq, ptr(id)
		}
	}
	if id, ok := cp.Commits.Latest(); ok {
		c, err := cp.ReadCommit(ctx, id)
		if err != nil && asProblem(err) == nil {
			return nil, err
		}
		s.LatestCommit = newCommitInfo(id, c, err)
		report(s.LatestCommit.Problem)
	}

	// sources/ and state/: one walk each.
	sourceFiles, err := store.Walk(ctx, checkpoint.DirSources)
	if err != nil {
		return nil, err
	}
	srcs, probs, err := inspectSources(ctx, cp, sourcesSeq, sourceFiles)
	if err != nil {
		return nil, err
	}
	s.Sources = srcs
	s.Problems = append(s.Problems, probs...)

	stateFiles, err := store.Walk(ctx, checkpoint.DirState)
	if err != nil {
		return nil, err
	}
	st, probs, err := inventoryState(ctx, store, stateFiles)
	if err != nil {
		return nil, err
	}
	s.State = st
	s.Problems = append(s.Problems, probs...)

	if s.Leftovers, err = findLeftovers(ctx, cp, sourceFiles, stateFiles); err != nil {
		return nil, err
	}
	return s, nil
}
