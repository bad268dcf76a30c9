package repair

import (
	"context"
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal"
)

// copyCommittedApplies reports whether copy-committed differs from copy-previous: the latest
// offsets L have no commit, and an older commit C with its offsets file exists below L-1 (the
// async crash: offsets 0,3,7,12, commits 0,3,7).
func copyCommittedApplies(cp *checkpoint.Checkpoint) bool {
	L, ok := cp.Offsets.Latest()
	C, okC := cp.Commits.Latest()
	return ok && okC && C < L-1 && cp.Offsets.Has(C) && !cp.Commits.Has(L)
}

// copyCommitted is the action of StrategyCopyCommitted, or a refusal recorded in c when the
// checkpoint is not the async crash or the query is stateful.
//
// Why it loses nothing: the sync engine takes the start of batch L from offsets/L-1. Being a copy
// of offsets/C, the re-run of L reads (end of C, end of L], every record after the last commit,
// exactly what an async restart re-runs. Batches C+1..L-1 are folded into that one re-run, which a
// stateless query processes the same way; a stateful one would find state version L (written by
// batch L-1) or lack it and count C+1..L-1 twice, so it is refused.
func copyCommitted(ctx context.Context, cp *checkpoint.Checkpoint, code string, sinkLatest *int64, c *candidate) ([]journal.Action, error) {
	L, _ := cp.Offsets.Latest()
	C, okC := cp.Commits.Latest()
	switch {
	case !okC:
		c.preRefusal = "there is no commit to copy: the query never finished a batch"
		return nil, nil
	case cp.Commits.Has(L):
		c.preRefusal = fmt.Sprintf("batch %d is committed, so a copy of its offsets is copy-previous", L)
		return nil, nil
	case sinkLatest != nil && *sinkLatest >= L:
		c.preRefusal = fmt.Sprintf("the file sink has committed batch %d: it would skip the re-run of batch %d as \"already committed\" and with it the records of batches %d-%d", *sinkLatest, L, C+1, L-1)
		return nil, nil
	case !cp.Offsets.Has(C):
		c.preRefusal = fmt.Sprintf("offsets/%d, the offsets of the latest commit, is missing", C)
		return nil, nil
	}
	es, err := cp.Store.Walk(ctx, checkpoint.DirState)
	if err != nil {
		return nil, err
	}
	if len(es) > 0 {
		c.preRefusal = fmt.Sprintf("the query is stateful (%s/ holds %d file(s)): folding batches %d-%d into one re-run of batch %d would apply their records to state that already holds some of them",
			checkpoint.DirState, len(es), C+1, L-1, L)
		return nil, nil
	}
	prev := L - 1
	return []journal.Action{{Op: journal.OpCopy, Path: cp.Offsets.Dir + "/" + fmt.Sprint(prev), From: cp.Offsets.FilePath(C), Code: code,
		Reason: fmt.Sprintf("batch %d has no commit and offsets/%d is missing: a copy of offsets/%d (the latest commit) makes the restart re-run batch %d from where batch %d ended, as an async restart does; nothing is lost",
			L, prev, C, L, C)}}, nil
}
