// Package deltastate reads what the Delta tables a checkpoint names hold (--delta-table for its
// Delta sources, --delta-sink for its Delta sink), from any store, as the data the planner takes
// (recovery.Options.Delta, the sink's txn): the Delta side of what topicstate is for Kafka.
package deltastate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/deltalog"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Opener opens a table's location (cli.Env.OpenStore).
type Opener func(context.Context, string) (storage.Store, error)

// SpecError is a --delta-table value that cannot be used: a usage mistake (exit code 2).
type SpecError struct{ err error }

func specError(err error) error { return &SpecError{err} }

func (e *SpecError) Error() string { return e.err.Error() }

// UsageMistake marks the error as the user's (exitcode.Code).
func (e *SpecError) UsageMistake() bool { return true }

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

// ReadTables opens and reads every table of specs (--delta-table values, "PATH" or "I=PATH"),
// assigning each to a source: the given index, else the checkpoint's Delta sources (by the shape
// of the latest offsets file's lines) in order, not counting those given by index. A value that
// names no table, a source twice, or more tables than Delta sources is a *SpecError.
func ReadTables(ctx context.Context, open Opener, cp *checkpoint.Checkpoint, specs []string) ([]recovery.DeltaTable, error) {
	if len(specs) == 0 {
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
	for _, v := range specs {
		i, p := splitIndexed(v)
		if p == "" {
			return nil, specError(fmt.Errorf("--delta-table %q: no path", v))
		}
		if i >= 0 {
			if used[i] {
				return nil, specError(fmt.Errorf("--delta-table: source %d given twice", i))
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
			return nil, specError(fmt.Errorf("--delta-table %s: the checkpoint's latest offsets have no Delta source left to match it; give the source index as I=PATH", ps[k].path))
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

// ReadSink reads the txn of the Delta sink at location (--delta-sink) for the checkpoint's query
// id; nil without a location.
func ReadSink(ctx context.Context, open Opener, cp *checkpoint.Checkpoint, location string) (*deltalog.SinkTxn, error) {
	if location == "" {
		return nil, nil
	}
	m, err := cp.ReadMetadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("--delta-sink needs the query id from the checkpoint's metadata file: %w", err)
	}
	if m == nil || m.ID == "" {
		return nil, errors.New("--delta-sink needs the query id from the checkpoint's metadata file, which is missing")
	}
	s, err := open(ctx, location)
	if err != nil {
		return nil, fmt.Errorf("--delta-sink %s: %w", location, err)
	}
	t, err := deltalog.Read(ctx, s, location)
	if err != nil {
		return nil, fmt.Errorf("--delta-sink: %w", err)
	}
	return t.Txn(ctx, m.ID)
}
