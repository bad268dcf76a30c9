package repair

import (
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// Batches is a set of batch ids as sorted, disjoint spans: a plan names spans of ids, never lists,
// because ids reach 2^63-1 (a checkpoint with offsets/9000000000000000000 must not cost memory in
// proportion to its ids).
type Batches []recovery.Span

// Count is the number of ids in the set.
func (b Batches) Count() uint64 {
	var n uint64
	for _, s := range b {
		n += s.Count()
	}
	return n
}

// String renders "3", "3..5" or "1, 4..6".
func (b Batches) String() string {
	parts := make([]string, len(b))
	for i, s := range b {
		parts[i] = s.String()
	}
	return strings.Join(parts, ", ")
}

// Contains reports whether id is in the set.
func (b Batches) Contains(id int64) bool {
	for _, s := range b {
		if s.Contains(id) {
			return true
		}
	}
	return false
}

// Add returns the set with s added, merged with the spans it touches.
func (b Batches) Add(s recovery.Span) Batches {
	if s.From > s.To {
		return b
	}
	out := make(Batches, 0, len(b)+1)
	for _, x := range b {
		// Disjoint and not adjacent (careful at the int64 ends).
		if x.To < s.From && s.From-x.To > 1 || s.To < x.From && x.From-s.To > 1 {
			out = append(out, x)
			continue
		}
		s = recovery.Span{From: min(s.From, x.From), To: max(s.To, x.To)}
	}
	out = append(out, s)
	slices.SortFunc(out, func(a, c recovery.Span) int {
		switch {
		case a.From < c.From:
			return -1
		case a.From > c.From:
			return 1
		}
		return 0
	})
	return out
}

// Remove returns the set without the ids of s.
func (b Batches) Remove(s recovery.Span) Batches {
	if s.From > s.To {
		return b
	}
	out := make(Batches, 0, len(b)+1)
	for _, x := range b {
		if x.To < s.From || x.From > s.To {
			out = append(out, x)
			continue
		}
		if x.From < s.From {
			out = append(out, recovery.Span{From: x.From, To: s.From - 1})
		}
		if x.To > s.To {
			out = append(out, recovery.Span{From: s.To + 1, To: x.To})
		}
	}
	return out
}
