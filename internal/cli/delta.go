package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/deltalog"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// DeltaFlags are --delta-table and --delta-sink, shared by doctor, replay, repair and lag.
type DeltaFlags struct {
	// Tables are --delta-table values: "PATH" or "I=PATH" (source I). Default: none.
	Tables []string
	// Sink is --delta-sink: the Delta table the query writes to. Default: none.
	Sink string
}

// AddTableFlag adds --delta-table.
func (f *DeltaFlags) AddTableFlag(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.Tables, "delta-table", f.Tables, "a Delta source's table `[I=]PATH` (any store; I: the source index, default the Delta sources in order; repeatable)")
}

// AddSinkFlag adds --delta-sink.
func (f *DeltaFlags) AddSinkFlag(fs *pflag.FlagSet) {
	fs.StringVar(&f.Sink, "delta-sink", f.Sink, "the Delta table `PATH` the query writes to (its txn action for the query id says which batches it has)")
}

// splitIndexed splits "I=PATH" into I and PATH; a value without a decimal index before "="
// is a path (-1).
func splitIndexed(v string) (int, string) {
	i, rest, ok := strings.Cut(v, "=")
	if !ok || i == "" {
		return -1, v
	}
	n, err := strconv.Atoi(i)
	if err != nil || n < 0 || strconv.Itoa(n) != i {
		return -1, v
	}
	return n, rest
}

// ReadTables opens and reads every --delta-table, assigning each to a source: the given index,
// else the checkpoint's Delta sources (by the shape of the latest offsets file's lines) in
// order, not counting those given by index.
func (f *DeltaFlags) ReadTables(ctx context.Context, open func(context.Context, string) (storage.Store, error), cp *checkpoint.Checkpoint) ([]recovery.DeltaTable, error) {
	if len(f.Tables) == 0 {
		return nil, nil
	}
	var deltaSources []int
	if L, ok := cp.Offsets.Latest(); ok {
		if seq, err := cp.ReadOffsets(ctx, L); err == nil {
			for i, s := range seq.Sources {
				if !s.Void && logformat.IsDeltaSourceOffset(s.JSON) {
					deltaSources = append(deltaSources, i)
				}
			}
		}
	}
	var out []recovery.DeltaTable
	used := map[int]bool{}
	type pending struct {
		idx  int
		path string
	}
	var ps []pending
	for _, v := range f.Tables {
		i, p := splitIndexed(v)
		if p == "" {
			return nil, exitcode.UsageError(fmt.Errorf("--delta-table %q: no path", v))
		}
		if i >= 0 {
			if used[i] {
				return nil, exitcode.UsageError(fmt.Errorf("--delta-table: source %d given twice", i))
			}
			used[i] = true
		}
		ps = append(ps, pending{i, p})
	}
	free := slices.DeleteFunc(slices.Clone(deltaSources), func(i int) bool { return used[i] })
	for k := range ps {
		if ps[k].idx >= 0 {
			continue
		}
		if len(free) == 0 {
			return nil, exitcode.UsageError(fmt.Errorf("--delta-table %s: the checkpoint's latest offsets have no Delta source left to match it; give the source index as I=PATH", ps[k].path))
		}
		ps[k].idx, free = free[0], free[1:]
	}
	for _, p := range ps {
		s, err := open(ctx, p.path)
		if err != nil {
			return nil, fmt.Errorf("--delta-table %s: %w", p.path, err)
		}
		t, err := deltalog.Read(ctx, s, p.path)
		if err != nil {
			return nil, fmt.Errorf("--delta-table: %w", err)
		}
		out = append(out, recovery.DeltaTable{Source: p.idx, Table: t})
	}
	slices.SortFunc(out, func(a, b recovery.DeltaTable) int { return a.Source - b.Source })
	return out, nil
}

// ReadSink reads --delta-sink's txn for the checkpoint's query id; nil without --delta-sink.
func (f *DeltaFlags) ReadSink(ctx context.Context, open func(context.Context, string) (storage.Store, error), cp *checkpoint.Checkpoint) (*deltalog.SinkTxn, error) {
	if f.Sink == "" {
		return nil, nil
	}
	m, err := cp.ReadMetadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("--delta-sink needs the query id from the checkpoint's metadata file: %w", err)
	}
	if m == nil || m.ID == "" {
		return nil, errors.New("--delta-sink needs the query id from the checkpoint's metadata file, which is missing")
	}
	s, err := open(ctx, f.Sink)
	if err != nil {
		return nil, fmt.Errorf("--delta-sink %s: %w", f.Sink, err)
	}
	t, err := deltalog.Read(ctx, s, f.Sink)
	if err != nil {
		return nil, fmt.Errorf("--delta-sink: %w", err)
	}
	return t.Txn(ctx, m.ID)
}
