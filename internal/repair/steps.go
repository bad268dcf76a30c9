// Turning doctor findings into ordered actions: deletes, commits, checksums, the Spark procedure.

package repair

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// stepActions turns one doctor report into actions. Findings about leftovers are answered first
// (they never depend on a strategy); then the problems that block the restart, one kind per step,
// so that each step's report reflects the previous step's changes.
func stepActions(ctx context.Context, cp *checkpoint.Checkpoint, rep *doctor.Report, st Strategy, procedure *bool, sinkLatest *int64, c *candidate) ([]journal.Action, error) {
	var out []journal.Action
	L, hasL := cp.Offsets.Latest()
	C, hasC := cp.Commits.Latest()
	// doctor lists at most a few files per finding; the listing has them all.
	logOf := func(p string) *checkpoint.Log {
		switch path.Dir(p) {
		case checkpoint.DirOffsets:
			return cp.Offsets
		case checkpoint.DirCommits:
			return cp.Commits
		}
		return nil
	}
	for _, f := range rep.Findings {
		switch f.Code {
		case doctor.CodeLeftoverTempFile:
			files := append([]string{f.Path}, f.Files...)
			if l := logOf(f.Path); l != nil {
				files = files[:0]
				for _, e := range l.Temps {
					files = append(files, e.Path)
				}
			}
			for _, p := range files {
				out = append(out, journal.Action{Op: journal.OpDelete, Path: p, Code: f.Code,
					Reason: "leftover temporary file of an interrupted write; Spark never reads or removes it"})
			}
		case doctor.CodeOrphanChecksum:
			files := append([]string{f.Path}, f.Files...)
			if l := logOf(f.Path); l != nil {
				files = orphanChecksums(l)
			}
			for _, p := range files {
				out = append(out, journal.Action{Op: journal.OpDelete, Path: p, Code: f.Code,
					Reason: "checksum of a file that does not exist; it can make Hadoop refuse to write that file again"})
			}
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	for _, f := range rep.Findings {
		switch f.Code {
		case doctor.CodeCommitsAhead:
			if !hasC {
				continue
			}
			for _, id := range cp.Commits.IDs() {
				if !hasL || id > L {
					out = append(out, deleteBatch(cp, cp.Commits, id, f.Code,
						fmt.Sprintf("commit of batch %d, which has no offsets (latest offsets: %s): Spark would stop with a concurrent-update error when it reaches it", id, batchOrNone(L, hasL)))...)
				}
			}
			return out, nil
		case doctor.CodeCorruptLogFile:
			if f.Severity != doctor.Error {
				continue
			}
			switch {
			case hasL && f.Path == cp.Offsets.FilePath(L):
				out = append(out, deleteBatch(cp, cp.Offsets, L, f.Code,
					fmt.Sprintf("the latest offsets file cannot be parsed (%s): an unfinished write; batch %d is planned again", firstLine(f.Message), L))...)
				out = append(out, commitsFrom(cp, L, f.Code, "offsets/"+fmt.Sprint(L)+" is deleted")...)
				return out, nil
			case hasC && f.Path == cp.Commits.FilePath(C):
				out = append(out, deleteBatch(cp, cp.Commits, C, f.Code,
					fmt.Sprintf("the latest commit cannot be parsed (%s): an unfinished write; batch %d runs again", firstLine(f.Message), C))...)
				return out, nil
			}
		case doctor.CodeEmptyOffsetsWithCommits:
			for _, id := range cp.Commits.IDs() {
				out = append(out, deleteBatch(cp, cp.Commits, id, f.Code,
					"commit without any offsets: the query can only start afresh, and Spark would stop when it reaches an existing commit")...)
			}
			c.warnings = append(c.warnings, "offsets/ is empty: after this repair the query starts afresh at batch 0 from its sources' starting positions (Kafka: sources/<i>/0 when present, else startingOffsets). Restore offsets/ from a backup instead if you have one")
			return out, nil
		}
	}
	for _, f := range rep.Findings {
		if f.Code != doctor.CodeMissingPreviousOffsets || !hasL {
			continue
		}
		c.choice = true
		switch st {
		case "":
			return nil, nil // the base build stops here: strategies differ from this point
		case StrategyCopyPrevious:
			prev := L - 1
			return []journal.Action{{Op: journal.OpCopy, Path: cp.Offsets.Dir + "/" + fmt.Sprint(prev), From: cp.Offsets.FilePath(L), Code: f.Code,
				Reason: fmt.Sprintf("offsets/%d is missing and the normal engine needs it to restart from batch %d; a copy of offsets/%d makes the previous batch end where batch %d ends", prev, L, L, L)}}, nil
		case StrategySparkProcedure:
			*procedure = true
			return nil, nil
		case StrategyCopyCommitted:
			return copyCommitted(ctx, cp, f.Code, sinkLatest, c)
		case StrategyDelete:
			// Go back to the newest id whose predecessor exists (or 0): everything above it goes.
			keep := int64(-1)
			for i := len(cp.Offsets.IDs()) - 1; i >= 0; i-- {
				id := cp.Offsets.IDs()[i]
				if id == 0 || cp.Offsets.Has(id-1) {
					keep = id
					break
				}
			}
			for i := len(cp.Offsets.IDs()) - 1; i >= 0; i-- {
				id := cp.Offsets.IDs()[i]
				if id <= keep {
					break
				}
				out = append(out, deleteBatch(cp, cp.Offsets, id, f.Code, deleteReason(id, keep))...)
			}
			out = append(out, commitsFrom(cp, keep+1, f.Code, fmt.Sprintf("the offsets above batch %d are deleted", keep))...)
			return out, nil
		}
	}
	return nil, nil
}

func deleteReason(id, keep int64) string {
	switch {
	case keep < 0:
		return fmt.Sprintf("no offsets file has its predecessor: batch %d goes, and the query starts afresh", id)
	case keep == 0:
		return fmt.Sprintf("offsets/%d lies beyond a gap: it goes with every offsets file above batch 0, so batch 0 is the latest again", id)
	}
	return fmt.Sprintf("offsets/%d lies beyond a gap: it goes with every offsets file above batch %d, so batches %d and %d, both on disk, are the latest two again", id, keep, keep-1, keep)
}

func batchOrNone(id int64, ok bool) string {
	if !ok {
		return "none"
	}
	return fmt.Sprint(id)
}

// commitsFrom deletes every commit at or above id: a commit whose offsets are gone is "commits
// ahead", which makes Spark stop with a concurrent-update error (spark-semantics §6.6 option 2).
func commitsFrom(cp *checkpoint.Checkpoint, id int64, code, why string) []journal.Action {
	var out []journal.Action
	for i := len(cp.Commits.IDs()) - 1; i >= 0; i-- {
		c := cp.Commits.IDs()[i]
		if c < id {
			break
		}
		out = append(out, deleteBatch(cp, cp.Commits, c, code,
			fmt.Sprintf("commit of batch %d, at or above batch %d (%s): kept, it would be ahead of the latest offsets, and Spark stops with a concurrent-update error when it reaches it", c, id, why))...)
	}
	return out
}

// deleteBatch deletes batch id of log and its checksum file (both Hadoop's ".N.crc" and the "N.crc"
// of Spark's checksum file manager), so no stale checksum is left to block a later write of N.
func deleteBatch(cp *checkpoint.Checkpoint, l *checkpoint.Log, id int64, code, reason string) []journal.Action {
	e, ok := l.File(id)
	if !ok {
		return nil
	}
	out := []journal.Action{{Op: journal.OpDelete, Path: e.Path, Code: code, Reason: reason}}
	name := path.Base(e.Path)
	for _, crc := range l.Checksums {
		if path.Base(crc.Path) == "."+name+".crc" {
			out = append(out, journal.Action{Op: journal.OpDelete, Path: crc.Path, Code: code, Reason: "checksum of " + e.Path + ", deleted with it"})
		}
	}
	for _, o := range l.Others {
		if !o.IsDir && path.Base(o.Path) == name+".crc" {
			out = append(out, journal.Action{Op: journal.OpDelete, Path: o.Path, Code: code, Reason: "checksum of " + e.Path + ", deleted with it"})
		}
	}
	return out
}

// order sorts actions so that every intermediate state is one Spark can restart from as well as
// the original: leftovers first, then commits before offsets, newest batch first (a commit never
// outlives its offsets, so a crash mid-way never creates "commits ahead"), each checksum right
// after its file, copies last.
func order(as []journal.Action) []journal.Action {
	rank := func(a journal.Action) (int, int64, int) {
		dir, name := path.Split(a.Path)
		n := logformat.ParseName(name)
		kind := 0 // leftovers
		switch {
		case a.Op == journal.OpCopy:
			kind = 4
		case a.Code == doctor.CodeLeftoverTempFile || a.Code == doctor.CodeOrphanChecksum:
			kind = 0
		case dir == checkpoint.DirCommits+"/":
			kind = 1
		default:
			kind = 2
		}
		crc := 0
		if n.Kind == logformat.NameChecksum || strings.HasSuffix(name, ".crc") {
			crc = 1
			if !n.HasBatch {
				n.Batch, _ = parseCRCBatch(name)
			}
		}
		return kind, n.Batch, crc
	}
	out := slices.Clone(as)
	sort.SliceStable(out, func(i, j int) bool {
		ki, bi, ci := rank(out[i])
		kj, bj, cj := rank(out[j])
		if ki != kj {
			return ki < kj
		}
		if ki == 0 {
			return out[i].Path < out[j].Path
		}
		if bi != bj {
			return bi > bj
		}
		return ci < cj
	})
	return out
}

func parseCRCBatch(name string) (int64, bool) {
	n := logformat.ParseName(strings.TrimSuffix(name, ".crc"))
	return n.Batch, n.Kind == logformat.NameBatch
}

// procedureSteps are Spark's documented steps for switching async progress tracking off, with the
// batches the checkpoint will show when they are done.
func procedureSteps(cp *checkpoint.Checkpoint) []string {
	L, _ := cp.Offsets.Latest()
	return []string{
		`Restart the query with async progress tracking on and a checkpoint interval of 0: on writeStream, .option("asyncProgressTrackingEnabled", "true").option("asyncProgressTrackingCheckpointIntervalMs", "0")`,
		fmt.Sprintf("Let it process at least two micro-batches, so that offsets/%d and offsets/%d and their commits exist (check with `ckpt inspect` or `ckpt doctor`)", L+1, L+2),
		"Stop the query, remove the two options, and start it again: the normal engine now finds two consecutive offsets files",
	}
}

// orphanChecksums lists the checksum files of l whose batch file is gone: Hadoop's ".N.crc" and
// the "N.crc" of Spark's checksum file manager.
func orphanChecksums(l *checkpoint.Log) []string {
	var out []string
	for _, e := range l.Checksums {
		n := logformat.ParseName(path.Base(e.Path))
		if n.HasBatch && logformat.ParseName(n.Target).Kind == logformat.NameBatch && !l.Has(n.Batch) {
			out = append(out, e.Path)
		}
	}
	for _, e := range l.Others {
		if t, ok := strings.CutSuffix(path.Base(e.Path), ".crc"); ok && !e.IsDir {
			if n := logformat.ParseName(t); n.Kind == logformat.NameBatch && !l.Has(n.Batch) {
				out = append(out, e.Path)
			}
		}
	}
	return out
}
