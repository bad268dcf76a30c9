package recovery

import (
	"fmt"
	"strconv"
	"strings"
)

// Lines says, one line per operator and store, which state version the restart's first batch
// loads, from which files, and which batch runs against it:
//
//	operator 0 loads version 5 (from 3.snapshot + 4.delta..5.delta in 2 partitions), batch 5 re-runs against it
func (s *StateLoad) Lines() []string {
	runs := fmt.Sprintf("batch %d runs against it", s.Batch)
	if s.Rerun {
		runs = fmt.Sprintf("batch %d re-runs against it", s.Batch)
	}
	var out []string
	for _, st := range s.Stores {
		who := fmt.Sprintf("operator %d", st.Operator)
		if st.Store != "default" {
			who += " store " + st.Store
		}
		line := fmt.Sprintf("%s loads version %d (%s), %s", who, s.Version, st.source(s.Version), runs)
		if n := len(st.Ahead); n > 0 {
			what := "left by its crashed attempt"
			if !s.Rerun {
				what = "written before"
			}
			line += fmt.Sprintf("; version %d files in %s (%d of %d), %s, are not read: batch %d writes version %d again",
				s.Version+1, partitionList(st.Ahead), n, st.Partitions, what, s.Batch, s.Version+1)
		}
		out = append(out, line)
	}
	return out
}

// source says where version v of the store comes from.
func (st *StateStoreLoad) source(v int64) string {
	base, step := StateKindSnapshot, StateKindDelta
	if st.Provider == StateProviderRocksDB {
		base, step = StateKindZip, StateKindChangelog
	}
	if v == 0 {
		return "the empty state: nothing to read"
	}
	steps := func(from int64) string {
		if from == v {
			return fmt.Sprintf("%d.%s", v, step)
		}
		return fmt.Sprintf("%d.%s..%d.%s", from, step, v, step)
	}
	in := fmt.Sprintf(" in %d partition", st.Partitions)
	if st.Partitions != 1 {
		in += "s"
	}
	switch {
	case st.BasePartitions == 0:
		return "from " + steps(1) + in
	case st.BasePartitions == st.Partitions && st.BaseMin == st.BaseMax:
		from := fmt.Sprintf("from %d.%s", st.BaseMin, base)
		if st.BaseMin < v {
			from += " + " + steps(st.BaseMin+1)
		}
		return from + in
	}
	bases := fmt.Sprintf("%d.%s", st.BaseMin, base)
	if st.BaseMin != st.BaseMax {
		bases = fmt.Sprintf("%ss %d..%d", base, st.BaseMin, st.BaseMax)
	}
	return fmt.Sprintf("from %s in %d of %d partitions, then %d %s files up to %d.%s", bases, st.BasePartitions, st.Partitions, st.Steps, step, v, step)
}

// partitionList names partitions: "partition 0", "partitions 0, 2".
func partitionList(ps []int) string {
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = strconv.Itoa(p)
	}
	if len(ps) == 1 {
		return "partition " + ids[0]
	}
	return "partitions " + strings.Join(ids, ", ")
}
