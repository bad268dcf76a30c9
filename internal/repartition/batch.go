package repartition

import (
	"context"
	"fmt"
	"path"
	"strconv"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// The writing half every state change shares (`ckpt state repartition`, `ckpt state edit`):
// state files are create-only, so a change adds a no-data batch L+1 after the last committed
// batch L and writes state version L+2, which the restart's batch L+2 loads.

// NoDataBatch adds the no-data batch after committed batch last: offsets/last+1 as off (the
// caller's copy of offsets/last, with what it changes) and commits/last+1 as a copy of
// commits/last, each followed by Hadoop's checksum when crc.
func NoDataBatch(ctx context.Context, cp *checkpoint.Checkpoint, last int64, off *logformat.OffsetSeq, crc bool, add func(string, []byte) error) error {
	commit, err := cp.ReadFile(ctx, cp.Commits.FilePath(last))
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{cp.Offsets.Path(last + 1), off.Marshal()}, {cp.Commits.Path(last + 1), commit}} {
		if err := add(f.path, f.data); err != nil {
			return err
		}
		if crc {
			if err := add(ChecksumPath(f.path), logformat.HadoopChecksum(f.data)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Writes turns files (written in the order of paths) into create-only journal actions on cp,
// each with its digest and reason, and returns them with their total size and the overlay of
// cp with them applied (nothing is written), on which the caller predicts the restart.
func Writes(ctx context.Context, cp *checkpoint.Checkpoint, paths []string, files map[string][]byte, reason func(string) string) ([]journal.Action, int64, *journal.Overlay, error) {
	ov := journal.NewOverlay(cp)
	var size int64
	actions := make([]journal.Action, 0, len(paths))
	for _, f := range paths {
		a := journal.Action{Op: journal.OpWrite, Path: f, Data: files[f], Reason: reason(f)}
		if err := ov.Add(ctx, &a); err != nil {
			return nil, 0, nil, err
		}
		size += a.Size
		actions = append(actions, a)
	}
	return actions, size, ov, nil
}

// HasChecksum reports whether the files Spark wrote carry Hadoop checksums (a local file
// system: ChecksumFileSystem; object stores have none): then a change writes them too.
func HasChecksum(ctx context.Context, s storage.Store, cp *checkpoint.Checkpoint, last int64) bool {
	_, err := s.Stat(ctx, ChecksumPath(cp.Offsets.Path(last)))
	return err == nil
}

// ChecksumPath is the path of Hadoop's checksum of p.
func ChecksumPath(p string) string { return path.Join(path.Dir(p), "."+path.Base(p)+".crc") }

// Base is the last committed batch L a state change builds on, with what its offsets say.
type Base struct {
	Batch   int64
	Offsets *logformat.OffsetSeq
	// Partitions is the query's spark.sql.shuffle.partitions; Codec its state codec.
	Partitions int
	Codec      string
}

// The kinds of BaseRefusal a command may word in Spark's own terms.
const (
	NoCommittedBatch = iota + 1
	LastBatchFailed
	OtherRefusal
)

// BaseRefusal says why a checkpoint offers no base for a state change.
type BaseRefusal struct {
	Kind int
	// Batch is the batch that did not commit (LastBatchFailed).
	Batch  int64
	Reason string
}

// LoadBase finds the base of a state change: the last batch must have committed (a state
// change after a failed batch would race the batch Spark reruns), with its offsets, partition
// count and a state codec ckpt writes.
func LoadBase(ctx context.Context, cp *checkpoint.Checkpoint) (*Base, *BaseRefusal, error) {
	last, ok := cp.Commits.Latest()
	if !ok {
		return nil, &BaseRefusal{Kind: NoCommittedBatch, Reason: "no batch has committed"}, nil
	}
	if lo, ok := cp.Offsets.Latest(); ok && lo > last {
		return nil, &BaseRefusal{Kind: LastBatchFailed, Batch: lo, Reason: fmt.Sprintf("the last batch %d did not commit (offsets/%d has no commits/%d): restart the query and let it finish first", lo, lo, lo)}, nil
	}
	other := func(format string, args ...any) (*Base, *BaseRefusal, error) {
		return nil, &BaseRefusal{Kind: OtherRefusal, Reason: fmt.Sprintf(format, args...)}, nil
	}
	if !cp.Offsets.Has(last) {
		return other("commits/%d has no offsets/%d: the checkpoint needs a repair first (ckpt doctor)", last, last)
	}
	off, err := cp.ReadOffsets(ctx, last)
	if err != nil {
		return nil, nil, err
	}
	b := &Base{Batch: last, Offsets: off, Codec: statefmt.DefaultCodec}
	v, ok := off.ConfValue(ConfShufflePartitions)
	if !ok {
		return other("offsets/%d records no %s: the query's partition count is unknown", last, ConfShufflePartitions)
	}
	if b.Partitions, err = strconv.Atoi(v); err != nil || b.Partitions < 1 {
		return other("offsets/%d: %s is %q, not a partition count", last, ConfShufflePartitions, v)
	}
	if c, ok := off.ConfValue(ConfStateCodec); ok {
		if b.Codec, ok = statefmt.CanonicalCodec(c); !ok {
			return other("offsets/%d: state codec %q: ckpt writes lz4, zstd, snappy and lzf", last, c)
		}
	}
	return b, nil, nil
}

// BatchReason is the reason of a file NoDataBatch adds or of a checksum (ok false for others):
// offsetsWhy says what offsets/last+1 is.
func BatchReason(f string, last int64, offsetsWhy string) (string, bool) {
	base := path.Base(f)
	switch {
	case path.Ext(base) == ".crc":
		return "Hadoop's checksum of " + path.Join(path.Dir(f), base[1:len(base)-4]) + ", as Spark writes one on this store", true
	case path.Dir(f) == checkpoint.DirOffsets:
		return fmt.Sprintf("the no-data batch %d: %s", last+1, offsetsWhy), true
	case path.Dir(f) == checkpoint.DirCommits:
		return fmt.Sprintf("batch %d committed: a copy of commits/%d", last+1, last), true
	}
	return "", false
}
