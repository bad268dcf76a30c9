// Deep checks: every offsets and commits file, changes in the number of sources, and state
// rows against their schema files (stateschema.go).

package doctor

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// deep reads every offsets and commits file the restart did not, concurrently, and reports
// damaged files and changes in the number of sources.
func (r *runner) deep() error {
	for _, lg := range []*checkpoint.Log{r.cp.Offsets, r.cp.Commits} {
		var paths []string
		var idsRead []int64
		for _, id := range lg.IDs() {
			p := lg.Path(id)
			if r.reported[p] {
				continue
			}
			paths = append(paths, p)
			idsRead = append(idsRead, id)
		}
		// Capped as every read of a log file: a corrupt file of one 1 GiB line is reported as
		// corrupt at the cost of the limit, not read whole.
		data, tooLarge, err := checkpoint.ReadManyCapped(r.ctx, r.cp.Store, paths, r.opts.Parallelism)
		if err != nil {
			return fmt.Errorf("read %s/: %w", lg.Dir, err)
		}
		type bad struct {
			files    []string
			first    int64
			refusal  *recovery.VersionError // the first file's, for unsupported versions
			versions []int
		}
		damaged := map[string]*bad{}
		counts := make([]int, len(paths))
		versions := make([]int, len(paths))
		kind := recovery.LogOffsets
		if lg == r.cp.Commits {
			kind = recovery.LogCommits
		}
		var empty []string
		var firstEmpty int64
		for i, p := range paths {
			if tooLarge != nil && tooLarge[i] != nil {
				if b := damaged[CodeCorruptLogFile]; b == nil {
					damaged[CodeCorruptLogFile] = &bad{first: idsRead[i]}
				}
				damaged[CodeCorruptLogFile].files = append(damaged[CodeCorruptLogFile].files, p)
				counts[i] = -1
				continue
			}
			if len(data[i]) == 0 {
				// Reported as empty, not as a parse failure, and not counted in the
				// source history.
				if empty == nil {
					firstEmpty = idsRead[i]
				}
				empty = append(empty, p)
				counts[i] = -1
				continue
			}
			var perr error
			if lg == r.cp.Offsets {
				var seq *logformat.OffsetSeq
				seq, perr = logformat.ParseOffsets(p, data[i])
				if perr == nil {
					counts[i], versions[i] = len(seq.Sources), seq.Version
				}
			} else {
				var c *logformat.Commit
				c, perr = logformat.ParseCommit(p, data[i])
				if perr == nil {
					versions[i] = c.Version
				}
			}
			le := parseErr(perr)
			if le == nil && perr != nil {
				return perr
			}
			// The version header, whether the file parsed or was too new for any release: the
			// planner's CheckVersion says whether this Spark reads it.
			version := versions[i]
			if le != nil && le.Kind == logformat.KindUnsupportedVersion {
				version = le.Version
			}
			if le != nil {
				counts[i] = -1
			}
			code := ""
			var ve *recovery.VersionError
			if version > 0 {
				err := recovery.CheckVersion(r.res.SparkVersion, kind, version, r.opts.CommitFormatVersion)
				if err != nil && !errors.As(err, &ve) {
					return err
				}
			}
			switch {
			case ve != nil:
				code = CodeUnsupportedLogVersion
			case le != nil:
				code = CodeCorruptLogFile
			default:
				continue
			}
			b := damaged[code]
			if b == nil {
				b = &bad{first: idsRead[i], refusal: ve}
				damaged[code] = b
			}
			b.files = append(b.files, p)
			if ve != nil && !slices.Contains(b.versions, ve.Version) {
				b.versions = append(b.versions, ve.Version)
			}
		}
		if len(empty) > 0 {
			r.olderDamaged(CodeCorruptLogFile, lg, empty, firstEmpty, "is empty", "are empty", nil)
		}
		if b := damaged[CodeCorruptLogFile]; b != nil {
			r.olderDamaged(CodeCorruptLogFile, lg, b.files, b.first, "cannot be parsed", "cannot be parsed", nil)
		}
		if b := damaged[CodeUnsupportedLogVersion]; b != nil {
			sv := r.res.SparkVersion
			vs := make([]string, len(b.versions))
			for i, v := range b.versions {
				vs[i] = fmt.Sprintf("v%d", v)
			}
			r.olderDamaged(CodeUnsupportedLogVersion, lg, b.files, b.first,
				fmt.Sprintf("has format v%d, which Spark %s cannot read", b.refusal.Version, sv),
				fmt.Sprintf("have a format version Spark %s cannot read (%s)", sv, strings.Join(vs, ", ")),
				ptr(b.refusal.SparkError(r.cp.SparkPath(b.files[0]))))
		}
		if lg == r.cp.Offsets {
			r.sourceHistory(idsRead, counts)
		}
	}
	return r.stateSchemaFit()
}

// sourceHistory reports changes in the number of sources across offsets files (Deep only).
func (r *runner) sourceHistory(list []int64, counts []int) {
	if slices.ContainsFunc(r.findings, func(f Finding) bool { return f.Code == CodeSourceCountMismatch }) {
		return
	}
	type run struct {
		from, to int64
		n        int
	}
	var runs []run
	for i, id := range list {
		if counts[i] < 0 {
			continue
		}
		if len(runs) > 0 && runs[len(runs)-1].n == counts[i] {
			runs[len(runs)-1].to = id
			continue
		}
		runs = append(runs, run{id, id, counts[i]})
	}
	if len(runs) < 2 {
		return
	}
	var parts []string
	for _, rn := range runs {
		span := fmt.Sprint(rn.from)
		if rn.to != rn.from {
			span = fmt.Sprintf("%d..%d", rn.from, rn.to)
		}
		parts = append(parts, fmt.Sprintf("offsets %s list %d", span, rn.n))
	}
	r.add(Finding{
		Code: CodeSourceCountMismatch, Severity: Warning, Path: r.cp.Offsets.Path(runs[len(runs)-1].from),
		Message: "the number of sources changed over time: " + strings.Join(parts, "; "),
		Explanation: "The query's sources were changed at some point. The restart reads only the latest files, which agree, but going back to " +
			"batches with a different number of sources fails Spark's source-count assertion.",
		Fix: "Nothing blocks the restart; do not roll back across the change.",
	})
}
