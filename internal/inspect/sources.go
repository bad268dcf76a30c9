package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Source kinds, told apart by the shape of the offset JSON (and, for a bare number, by whether
// sources/<i>/ holds a file source log).
const (
	SourceKafka   = "kafka"   // {"topic":{"partition":offset,...},...}
	SourceFile    = "file"    // {"logOffset":n}, or a bare n with a sources/<i>/ log
	SourceLong    = "long"    // a bare number: LongOffset (memory, rate and similar sources)
	SourceDelta   = "delta"   // {"sourceVersion":1,"reservoirId":...}: a Delta Lake table
	SourceNone    = "none"    // "-": the source had no offset when the batch was planned
	SourceUnknown = "unknown" // anything else; shown raw
	SourceMissing = "missing" // sources/<i>/ exists but the offsets file has no line for it
)

// Source is one source index of the query: sources/<i>/ and line i of the offsets file.
type Source struct {
	Index int    `json:"index"`
	Dir   string `json:"dir"`
	Kind  string `json:"kind"`
	// Offset is the offset line as a JSON value (null for "-" or no line).
	Offset json.RawMessage `json:"offset"`
	Kafka  *KafkaSource    `json:"kafka,omitempty"`
	File   *FileSource     `json:"file,omitempty"`
	// Delta is a Delta source offset: the table id and where in the table the query is.
	Delta *logformat.DeltaSourceOffset `json:"delta,omitempty"`
	// Files counts the files below sources/<i>/.
	Files int `json:"files"`
}

// KafkaSource is what a Kafka offset says.
type KafkaSource struct {
	// Topics are sorted by name, partitions ascending: Spark's file order is a hash-map order
	// that means nothing.
	Topics []KafkaTopic `json:"topics"`
	// Partitions is the number of topic-partitions.
	Partitions int `json:"partitions"`
	// InitialOffsets is sources/<i>/0, where Spark keeps the resolved startingOffsets. Without
	// it a re-run of the first batch resolves startingOffsets again (default latest).
	InitialOffsets InitialOffsets `json:"initialOffsets"`
}

// KafkaTopic is one topic's partitions.
type KafkaTopic struct {
	Topic      string           `json:"topic"`
	Partitions []KafkaPartition `json:"partitions"`
}

// KafkaPartition is the next offset to read in one partition (Spark stores 1 + the last offset
// read; -1 and -2 mean latest and earliest in initial offsets).
type KafkaPartition struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// InitialOffsets is the Kafka initial-offsets file.
type InitialOffsets struct {
	Present bool   `json:"present"`
	File    string `json:"file"`
	// Offsets is the stored JSON as a JSON value; null when absent or corrupt.
	Offsets json.RawMessage `json:"offsets"`
	Topics  []KafkaTopic    `json:"topics"`
	Problem *Problem        `json:"problem,omitempty"`
}

// FileSource is a file stream source: its log offset and its seen-files log in sources/<i>/.
type FileSource struct {
	LogOffset int64 `json:"logOffset"`
	// Log lists sources/<i>/ (batch ids of the source's own log, not query batch ids).
	Log LogInfo `json:"log"`
	// Compacts are the ids of its .compact files.
	Compacts []int64 `json:"compacts"`
}

// offsetKind classifies one offset line. Kafka offsets are the only JSON objects of objects of
// integers; file source offsets are {"logOffset":n}. The likely parser runs first: this is on the
// path of --batches, once per offsets file.
func offsetKind(file, line string, void bool) (kind string, kafka *logformat.KafkaOffsets, logOffset int64) {
	if void {
		return SourceNone, nil, 0
	}
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "{") {
		if !strings.HasPrefix(t, `{"logOffset"`) {
			if k, err := logformat.ParseKafkaOffsets(file, line); err == nil {
				return SourceKafka, &k, 0
			}
		}
		if n, err := logformat.ParseFileSourceOffset(file, line); err == nil {
			return SourceFile, nil, n
		}
		if logformat.IsDeltaSourceOffset(line) {
			return SourceDelta, nil, 0
		}
		return SourceUnknown, nil, 0
	}
	if n, err := logformat.ParseLongOffset(file, line); err == nil {
		return SourceLong, nil, n
	}
	return SourceUnknown, nil, 0
}

// kafkaTopics sorts a parsed Kafka offset for display.
func kafkaTopics(k logformat.KafkaOffsets) ([]KafkaTopic, int) {
	out := []KafkaTopic{}
	n := 0
	for _, t := range k.Topics {
		kt := KafkaTopic{Topic: t.Topic, Partitions: []KafkaPartition{}}
		for _, p := range t.Partitions {
			kt.Partitions = append(kt.Partitions, KafkaPartition{Partition: p.Partition, Offset: p.Offset})
		}
		slices.SortFunc(kt.Partitions, func(a, b KafkaPartition) int { return int(a.Partition) - int(b.Partition) })
		n += len(kt.Partitions)
		out = append(out, kt)
	}
	slices.SortFunc(out, func(a, b KafkaTopic) int { return strings.Compare(a.Topic, b.Topic) })
	return out, n
}

// inspectSources describes every source index found in seq (the newest readable offsets file)
// or under sources/. files is the walk of sources/.
func inspectSources(ctx context.Context, cp *checkpoint.Checkpoint, seq *logformat.OffsetSeq, files []storage.Entry) ([]Source, []Problem, error) {
	// Group the walk by source index; keep the direct children, which form the source's log.
	byIndex := map[int][]storage.Entry{}
	for _, e := range files {
		rest := strings.TrimPrefix(e.Path, checkpoint.DirSources+"/")
		idx, _, _ := strings.Cut(rest, "/")
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 {
			continue
		}
		byIndex[i] = append(byIndex[i], e)
	}
	n := 0
	if seq != nil {
		n = len(seq.Sources)
	}
	for i := range byIndex {
		n = max(n, i+1)
	}
	out := []Source{}
	var problems []Problem
	for i := range n {
		dir := checkpoint.DirSources + "/" + strconv.Itoa(i)
		entries := byIndex[i]
		if seq != nil && i >= len(seq.Sources) && len(entries) == 0 {
			continue
		}
		src := Source{Index: i, Dir: dir, Kind: SourceMissing, Offset: json.RawMessage("null"), Files: len(entries)}
		if seq != nil && i < len(seq.Sources) {
			line := seq.Sources[i]
			src.Offset = rawJSON(line.JSON, line.Void)
			kind, kafka, logOffset := offsetKind(dir, line.JSON, line.Void)
			src.Kind = kind
			log, compacts := sourceLog(dir, entries)
			switch {
			case kind == SourceKafka:
				topics, parts := kafkaTopics(*kafka)
				src.Kafka = &KafkaSource{Topics: topics, Partitions: parts}
				init, p, err := readInitialOffsets(ctx, cp, i, entries)
				if err != nil {
					return nil, nil, err
				}
				src.Kafka.InitialOffsets = init
				if p != nil {
					problems = append(problems, *p)
				}
			case kind == SourceDelta:
				if o, err := logformat.ParseDeltaSourceOffset(dir, line.JSON); err == nil {
					src.Delta = &o
				} else if p := asProblem(err); p != nil {
					problems = append(problems, *p)
				}
			case kind == SourceFile, kind == SourceLong && log.Count > 0:
				// A bare number with a log beside it is a pre-2.1 file source offset.
				src.Kind = SourceFile
				src.File = &FileSource{LogOffset: logOffset, Log: log, Compacts: compacts}
			}
		} else if len(entries) == 0 && seq == nil {
			continue
		}
		out = append(out, src)
	}
	return out, problems, nil
}

// sourceLog lists the batch files directly in dir, as a CompactibleFileStreamLog names them.
func sourceLog(dir string, entries []storage.Entry) (LogInfo, []int64) {
	ids, compacts := []int64{}, []int64{}
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Path, dir+"/")
		if !ok || strings.Contains(name, "/") {
			continue
		}
		switch n := logformat.ParseName(name); n.Kind {
		case logformat.NameBatch:
			ids = append(ids, n.Batch)
		case logformat.NameCompact:
			ids = append(ids, n.Batch)
			compacts = append(compacts, n.Batch)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	slices.Sort(compacts)
	li := LogInfo{Dir: dir, Count: len(ids), Batches: ids, Ranges: Ranges(ids)}
	li.Gaps = Gaps(li.Ranges)
	if len(ids) > 0 {
		li.Latest = ptr(ids[len(ids)-1])
	}
	return li, compacts
}

// readInitialOffsets reads sources/<i>/0 when the walk saw it.
func readInitialOffsets(ctx context.Context, cp *checkpoint.Checkpoint, i int, entries []storage.Entry) (InitialOffsets, *Problem, error) {
	file := checkpoint.InitialOffsetsPath(i)
	io := InitialOffsets{File: file, Offsets: json.RawMessage("null"), Topics: []KafkaTopic{}}
	if !slices.ContainsFunc(entries, func(e storage.Entry) bool { return e.Path == file }) {
		return io, nil, nil
	}
	init, err := cp.ReadKafkaInitialOffsets(ctx, i)
	if errors.Is(err, fs.ErrNotExist) {
		return io, nil, nil
	}
	if err != nil {
		p := asProblem(err)
		if p == nil {
			return io, nil, err
		}
		io.Present = true
		io.Problem = p
		return io, p, nil
	}
	io.Present = true
	io.Offsets = rawJSON(init.JSON, false)
	io.Topics, _ = kafkaTopics(init.Offsets)
	return io, nil, nil
}
