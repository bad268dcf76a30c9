package scenario

import (
	"fmt"
	"math/rand"
	"slices"
)

// Random is a randomly drawn checkpoint: offsets and commits id sets with gaps, and now and then
// a corrupt latest offsets or commit file, a corrupt offsets/L-1, or no metadata. The planner's
// property test and the Spark oracle's generated cases both draw from it, so a generated case
// that Spark judged is the same checkpoint the property test checks.
type Random struct {
	Offsets, Commits []int64
	// CorruptLatest empties offsets/L; CorruptCommit empties the latest commit; CorruptPrevious
	// writes a header-only offsets/L-1; NoMetadata leaves out the metadata file.
	CorruptLatest, CorruptCommit, CorruptPrevious, NoMetadata bool
}

func (c Random) String() string {
	return fmt.Sprintf("offsets=%v commits=%v corruptL=%v corruptC=%v corruptPrev=%v noMetadata=%v",
		c.Offsets, c.Commits, c.CorruptLatest, c.CorruptCommit, c.CorruptPrevious, c.NoMetadata)
}

func drawIDs(r *rand.Rand, n int, max int64) []int64 {
	set := map[int64]bool{}
	for i := 0; i < n; i++ {
		set[r.Int63n(max+1)] = true
	}
	out := make([]int64, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// DrawRandom draws one checkpoint. The sequence of draws is part of the contract: the Spark
// oracle's goldens name generated cases by seed and index.
func DrawRandom(r *rand.Rand) Random {
	var c Random
	top := int64(r.Intn(12))
	switch r.Intn(4) {
	case 0: // contiguous, commits trailing by 0, 1 or more
		for id := int64(0); id <= top; id++ {
			c.Offsets = append(c.Offsets, id)
		}
		ctop := top - int64(r.Intn(4))
		for id := int64(0); id <= ctop; id++ {
			c.Commits = append(c.Commits, id)
		}
	default: // arbitrary sets with gaps
		c.Offsets = drawIDs(r, r.Intn(8), top)
		c.Commits = drawIDs(r, r.Intn(8), top+int64(r.Intn(3)))
	}
	c.CorruptLatest = r.Intn(8) == 0
	c.CorruptCommit = r.Intn(8) == 0
	c.CorruptPrevious = r.Intn(10) == 0
	c.NoMetadata = r.Intn(15) == 0
	return c
}

// Build lays the checkpoint out: one Kafka topic "t" with one partition, two records a batch.
func (c Random) Build(name string) *Builder {
	b := NewBuilder(name)
	if !c.NoMetadata {
		b.Metadata()
	}
	b.KafkaInitial(0, KafkaOffsets("t", 0, 0))
	for _, id := range c.Offsets {
		b.Offsets(id, Kafka("t", id, 2))
	}
	for _, id := range c.Commits {
		b.Commit(id)
	}
	if n := len(c.Offsets); n > 0 {
		L := c.Offsets[n-1]
		if c.CorruptLatest {
			b.Raw(fmt.Sprintf("offsets/%d", L), "")
		}
		if c.CorruptPrevious && L > 0 && slices.Contains(c.Offsets, L-1) {
			b.Raw(fmt.Sprintf("offsets/%d", L-1), "v1")
		}
	}
	if n := len(c.Commits); n > 0 && c.CorruptCommit {
		b.Raw(fmt.Sprintf("commits/%d", c.Commits[n-1]), "")
	}
	return b
}
