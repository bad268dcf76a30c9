package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// SinkMetadataDir is the file sink's log directory inside the output directory.
const SinkMetadataDir = sinklog.Dir

// localBlockSize is what Hadoop's local file system reports as block size (32 MiB); Spark copies
// it into SinkFileStatus.
const localBlockSize = 33554432

// FileSink is Spark's file sink (FileStreamSink) for JSON lines and Parquet: one data file per
// input partition per batch, named part-<task>-<job uuid>-c000.<ext>, then the batch's entry in
// <dir>/_spark_metadata (a CompactibleFileStreamLog, compacted every 10 batches). A batch already
// in the log is skipped, so re-runs write nothing twice and readers that trust the log see
// exactly-once output; files of an interrupted attempt stay as orphans, as with Spark.
//
// After each batch the log's expired files are deleted as Spark's CompactibleFileStreamLog does
// (spark.sql.streaming.fileSink.log.deletion): once batch N is added and compactInterval <=
// N+1-minBatchesToRetain, every log file whose batch id is below the compaction batch at or
// before N+1-minBatchesToRetain, and which is at least CleanupDelay old, is deleted; readers need
// only the latest compaction file and the batches after it.
type FileSink struct {
	store  storage.Store
	format string // json or parquet
	log    func(format string, a ...any)
	Now    func() time.Time
	// LogDeletion deletes expired log files (spark.sql.streaming.fileSink.log.deletion).
	// Default: true.
	LogDeletion bool
	// CleanupDelay is how old an expired log file must be before it is deleted, so that a
	// reader that listed the log a moment ago still finds the files
	// (spark.sql.streaming.fileSink.log.cleanupDelay). Default: 10 minutes.
	CleanupDelay time.Duration
	// MinBatchesToRetain is spark.sql.streaming.minBatchesToRetain. Default: 100.
	MinBatchesToRetain int
	// CompactInterval is spark.sql.streaming.fileSink.log.compactInterval, the interval of a
	// new log; a log that has compaction files keeps the interval they show, as in Spark
	// (deriveCompactInterval). Default: 10.
	CompactInterval int
	written         int64
	// interval is the compact interval, fixed at the first commit as Spark's lazy val: the
	// expired-file deletion would otherwise change what a later listing derives.
	interval int
}

// DefaultFileSinkCleanupDelay is spark.sql.streaming.fileSink.log.cleanupDelay's default.
const DefaultFileSinkCleanupDelay = query.DefaultFileSinkCleanupDelay

// NewFileSink writes format ("json" or "parquet") files to store.
func NewFileSink(store storage.Store, format string, log func(string, ...any)) *FileSink {
	if log == nil {
		log = func(string, ...any) {}
	}
	return &FileSink{store: store, format: format, log: log, Now: time.Now,
		LogDeletion: true, CleanupDelay: DefaultFileSinkCleanupDelay, MinBatchesToRetain: logformat.DefaultMinBatchesToRetain,
		CompactInterval: sinklog.DefaultCompactInterval}
}

// Description is Spark's FileSink[path].
func (s *FileSink) Description() string { return "FileSink[" + s.store.URI() + "]" }

// Close does nothing.
func (s *FileSink) Close() error { return nil }

// LatestBatch is the latest batch id in the sink log (for the planner's sink verdict).
func (s *FileSink) LatestBatch(ctx context.Context) (int64, bool, error) {
	return sinklog.Latest(ctx, s.store, SinkMetadataDir)
}

// OutputRows is the number of rows the sink wrote for b (0 when skipped).
func (s *FileSink) OutputRows(b *Batch) int64 { return s.written }

// LateOffsets is true: AddBatch makes offsets/N durable before the log entry.
func (s *FileSink) LateOffsets() bool { return true }

// AddBatch writes the batch unless the log already has it (FileStreamSink.addBatch).
func (s *FileSink) AddBatch(ctx context.Context, b *Batch) error {
	s.written = 0
	latest, ok, err := s.LatestBatch(ctx)
	if err != nil {
		return err
	}
	if ok && b.ID <= latest {
		s.log("Skipping already committed batch %d", b.ID)
		return nil
	}
	job := uuid.NewString()
	ext := ".json"
	if s.format == "parquet" {
		ext = ".snappy.parquet"
	}
	var entries []logformat.SinkFileStatus
	for i := range b.Parts {
		p := &b.Parts[i]
		var data []byte
		if s.format == "parquet" {
			data, err = encodeParquet(b.Columns, p)
		} else {
			data, err = encodeJSONLines(b.Columns, p)
		}
		if err != nil {
			return err
		}
		name := fmt.Sprintf("part-%05d-%s-c000%s", i, job, ext)
		if err := s.store.WriteFile(ctx, name, data); err != nil {
			return err
		}
		mod := s.Now().UnixMilli()
		if st, err := s.store.Stat(ctx, name); err == nil && !st.ModTime.IsZero() {
			mod = st.ModTime.UnixMilli()
		}
		entries = append(entries, logformat.SinkFileStatus{Path: checkpoint.SparkPath(s.store.URI(), name), Size: int64(len(data)),
			ModificationTime: mod, BlockReplication: 1, BlockSize: localBlockSize, Action: sinklog.ActionAdd})
		b.midSink()
	}
	b.midSink()
	// The data files are invisible until the log names them: offsets/N must be durable first.
	if b.OffsetsDurable != nil {
		if err := b.OffsetsDurable(ctx); err != nil {
			return err
		}
	}
	if err := s.commit(ctx, b.ID, entries); err != nil {
		return err
	}
	s.written = b.NumRows
	return nil
}

// commit adds the batch to the sink log, compacting when id is a compaction batch.
func (s *FileSink) commit(ctx context.Context, id int64, entries []logformat.SinkFileStatus) error {
	l, err := sinklog.Summarize(ctx, s.store, SinkMetadataDir)
	if err != nil {
		return err
	}
	if s.interval == 0 {
		def := s.CompactInterval
		if def <= 0 {
			def = sinklog.DefaultCompactInterval
		}
		s.interval, _ = sinklog.CompactInterval(l.Compacts, def)
	}
	interval := s.interval
	name := SinkMetadataDir + "/" + strconv.FormatInt(id, 10)
	if (id+1)%int64(interval) == 0 {
		// compactLogs over getValidBatchesBeforeCompactionBatch: max(0, id-interval) until id.
		var all []logformat.SinkFileStatus
		for prev := max(0, id-int64(interval)); prev < id; prev++ {
			es, err := s.readBatch(ctx, prev, l.Compacts)
			if err != nil {
				return err
			}
			all = append(all, es...)
		}
		all = append(all, entries...)
		deleted := map[string]bool{}
		for _, e := range all {
			if e.Action == sinklog.ActionDelete {
				deleted[e.Path] = true
			}
		}
		if len(deleted) > 0 {
			kept := all[:0]
			for _, e := range all {
				if !deleted[e.Path] {
					kept = append(kept, e)
				}
			}
			all = kept
		}
		entries = all
		name += ".compact"
	}
	log := &logformat.SinkLog{Version: 1, Entries: entries}
	if err := s.store.WriteFile(ctx, name, log.Marshal()); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("java.lang.IllegalStateException: Race while writing batch %d", id)
		}
		return err
	}
	return s.deleteExpired(ctx, id, int64(interval))
}

// deleteExpired is CompactibleFileStreamLog.deleteExpiredLog after batch id was added.
func (s *FileSink) deleteExpired(ctx context.Context, id, interval int64) error {
	minBatch := id + 1 - int64(s.MinBatchesToRetain)
	if !s.LogDeletion || interval <= 0 || interval > minBatch {
		return nil
	}
	// The compaction batch that keeps minBatchesToRetain batches readable.
	minCompaction := minBatch - minBatch%interval - 1
	expired := s.Now().Add(-s.CleanupDelay)
	es, err := s.store.List(ctx, SinkMetadataDir)
	if err != nil {
		return err
	}
	n := 0
	for _, e := range es {
		if e.IsDir {
			continue
		}
		nm := logformat.ParseName(path.Base(e.Path))
		if (nm.Kind != logformat.NameBatch && nm.Kind != logformat.NameCompact) || nm.Batch >= minCompaction || e.ModTime.After(expired) {
			continue
		}
		if err := s.store.Delete(ctx, e.Path); err != nil {
			return err
		}
		n++
	}
	if n > 0 {
		s.log("Deleted %d expired file sink log files below batch %d (compaction batch %d keeps the log readable)", n, minCompaction, minCompaction)
	}
	return nil
}

func (s *FileSink) readBatch(ctx context.Context, id int64, compacts []int64) ([]logformat.SinkFileStatus, error) {
	name := SinkMetadataDir + "/" + strconv.FormatInt(id, 10)
	for _, c := range compacts {
		if c == id {
			name += ".compact"
		}
	}
	r, err := s.store.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	lr, err := logformat.NewSinkLogReader(name, r)
	if err != nil {
		return nil, err
	}
	var out []logformat.SinkFileStatus
	for {
		e, err := lr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
}

// jsonValue converts a column value to what Spark's JSON writer writes: binary as base64,
// timestamps as ISO-8601 with milliseconds, headers as [{key, value}].
func jsonValue(v any) any {
	switch x := v.(type) {
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case time.Time:
		return x.UTC().Format("2006-01-02T15:04:05.000Z")
	case []transform.Header:
		out := make([]map[string]any, len(x))
		for i, h := range x {
			var val any
			if h.Value != nil {
				val = base64.StdEncoding.EncodeToString(h.Value)
			}
			out[i] = map[string]any{"key": h.Key, "value": val}
		}
		return out
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
	}
	return v
}

// encodeJSONLines writes one JSON object per row; null columns are left out, as Spark does.
func encodeJSONLines(cols []transform.Column, p *Part) ([]byte, error) {
	var buf bytes.Buffer
	var row []any
	for i := 0; i < p.Len(); i++ {
		row = p.Row(i, row[:0])
		buf.WriteByte('{')
		first := true
		for c, col := range cols {
			v := row[c]
			if v == nil {
				continue
			}
			if b, ok := v.([]byte); ok && b == nil {
				continue
			}
			if !first {
				buf.WriteByte(',')
			}
			first = false
			k, _ := json.Marshal(col.Name)
			buf.Write(k)
			buf.WriteByte(':')
			val, err := json.Marshal(jsonValue(v))
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", col.Name, err)
			}
			buf.Write(val)
		}
		buf.WriteString("}\n")
	}
	return buf.Bytes(), nil
}

// parquetNode maps a column kind to an optional Parquet node (Spark writes nullable columns).
func parquetNode(k transform.Kind) parquet.Node {
	var n parquet.Node
	switch k {
	case transform.KindBinary:
		n = parquet.Leaf(parquet.ByteArrayType)
	case transform.KindInt:
		n = parquet.Int(32)
	case transform.KindLong:
		n = parquet.Int(64)
	case transform.KindDouble:
		n = parquet.Leaf(parquet.DoubleType)
	case transform.KindBool:
		n = parquet.Leaf(parquet.BooleanType)
	case transform.KindTimestamp:
		n = parquet.Timestamp(parquet.Microsecond)
	default: // string, headers and any: text (headers and any as JSON)
		n = parquet.String()
	}
	return parquet.Optional(parquet.Compressed(n, &parquet.Snappy))
}

func parquetValue(k transform.Kind, v any) any {
	if v == nil {
		return nil
	}
	switch k {
	case transform.KindBinary:
		if b, ok := v.([]byte); ok {
			if b == nil {
				return nil
			}
			return b
		}
	case transform.KindInt:
		if x, ok := v.(int32); ok {
			return x
		}
	case transform.KindLong:
		switch x := v.(type) {
		case int64:
			return x
		case int:
			return int64(x)
		}
	case transform.KindDouble:
		if x, ok := v.(float64); ok {
			return x
		}
	case transform.KindBool:
		if x, ok := v.(bool); ok {
			return x
		}
	case transform.KindTimestamp:
		if x, ok := v.(time.Time); ok {
			return x.UTC()
		}
	case transform.KindString:
		if x, ok := v.(string); ok {
			return x
		}
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(jsonValue(v))
	return string(b)
}

func encodeParquet(cols []transform.Column, p *Part) ([]byte, error) {
	group := parquet.Group{}
	for _, c := range cols {
		group[c.Name] = parquetNode(c.Kind)
	}
	schema := parquet.NewSchema("spark_schema", group)
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, schema)
	var row []any
	for i := 0; i < p.Len(); i++ {
		row = p.Row(i, row[:0])
		m := make(map[string]any, len(cols))
		for c, col := range cols {
			m[col.Name] = parquetValue(col.Kind, row[c])
		}
		if err := w.Write(m); err != nil {
			return nil, fmt.Errorf("parquet: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("parquet: %w", err)
	}
	return buf.Bytes(), nil
}
