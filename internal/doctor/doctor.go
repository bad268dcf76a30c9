// Package doctor finds every known bad condition in a Spark Structured Streaming checkpoint and
// reports each as a Finding with a stable code (see Codes and docs/doctor.md).
//
// What a restart does is never decided here: restart-related findings are read off
// recovery.Plan's Result, the one recovery planner (docs/design.md). doctor adds what the
// planner does not judge: leftovers, gaps, retention, source counts, and, with Deep, every file.
//
// doctor reads only what it needs: the listings checkpoint.Load made, the files the planner
// reads (cached in the Checkpoint), and nothing per batch unless Deep is set, so that a
// checkpoint with 100k batches costs about one directory listing.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/deltalog"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/shell"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Options configures a doctor run.
type Options struct {
	// Mode, SparkVersion and CommitFormatVersion are passed to recovery.Plan.
	Mode                recovery.Mode
	SparkVersion        string
	CommitFormatVersion int
	// Trigger is the query's trigger (recovery.Options.Trigger); "" (the default) is unknown.
	Trigger string
	// Sink is a file sink's output directory (holding _spark_metadata), or the _spark_metadata
	// directory itself; nil skips the sink checks unless SinkLatest is set.
	Sink storage.Store
	// SinkLatest gives the sink's latest batch directly (tests, scenarios); it wins over Sink.
	// -1 means an empty sink log.
	SinkLatest *int64
	// SinkKind is recovery.SinkKindDelta when SinkLatest is a Delta sink's txn version (set by
	// DeltaSink too); default "" (a file sink).
	SinkKind string
	// Deep reads every offsets and commits file instead of only those a restart reads.
	Deep bool
	// Location is the checkpoint as the user typed it, substituted into fix commands; default
	// the store's URI.
	Location string
	// SinkLocation is the sink as the user typed it, for fix commands.
	SinkLocation string
	// Parallelism bounds concurrent reads with Deep (0: storage.DefaultReadParallelism).
	Parallelism int
	// Broker, when set, compares the offsets the restart reads next with the Kafka broker
	// (broker.go). nil: no broker checks.
	Broker *Broker
	// Delta are the tables of the query's Delta sources (read by the caller with
	// deltalog.Read): the planner checks the restart's Delta offsets against them (delta.go).
	// Default: none.
	Delta []recovery.DeltaTable
	// DeltaSink is the Delta sink's txn for the query (read by the caller with Table.Txn); it
	// stands for the sink as SinkLatest does, with the Delta sink's words. nil: none.
	DeltaSink *deltalog.SinkTxn
}

// maxListed bounds file lists in findings so that 100k leftovers do not make a 100k-line report.
const maxListed = 20

// Run diagnoses cp. It returns an error only when ckpt cannot read what it needs or opts are
// invalid; problems with the checkpoint are findings.
func Run(ctx context.Context, cp *checkpoint.Checkpoint, opts Options) (*Report, error) {
	r := &runner{ctx: ctx, cp: cp, opts: opts, reported: map[string]bool{}}
	r.loc = opts.Location
	if r.loc == "" {
		r.loc = cp.Store.URI()
	}
	r.L, r.hasL = cp.Offsets.Latest()
	r.C, r.hasC = cp.Commits.Latest()

	sinkLatest, err := r.sinkLatest()
	if err != nil {
		return nil, err
	}
	popts := recovery.Options{
		Mode:                opts.Mode,
		SparkVersion:        opts.SparkVersion,
		CommitFormatVersion: opts.CommitFormatVersion,
		Trigger:             opts.Trigger,
		SinkLatest:          sinkLatest,
		SinkKind:            opts.SinkKind,
		Delta:               opts.Delta,
	}
	if opts.DeltaSink != nil {
		popts.SinkLatest, popts.SinkKind = ptr(opts.DeltaSink.Version), recovery.SinkKindDelta
	}
	if b := opts.Broker; b != nil && b.State != nil {
		popts.Broker, popts.FailOnDataLossFalse = b.State, b.FailOnDataLossFalse
	}
	// The planner predicts the state the first batch loads too; with --deep it knows what the
	// files of those loads hold.
	popts, listing, err := state.WithState(ctx, cp, popts, opts.Deep)
	if err != nil {
		return nil, err
	}
	a, err := recovery.Assess(ctx, cp, popts)
	if err != nil {
		return nil, err
	}
	r.res, r.listing, r.assess = a.Plan, listing, a
	if err := r.restart(); err != nil {
		return nil, err
	}
	if err := r.migration(ctx); err != nil {
		return nil, err
	}
	if err := r.initialOffsets(); err != nil {
		return nil, err
	}
	r.sink()
	if err := r.sinkEntries(); err != nil {
		return nil, err
	}
	r.gaps()
	r.leftovers()
	r.repairLock()
	r.leftoverStaging()
	r.retention()
	if err := r.emptyFiles(); err != nil {
		return nil, err
	}
	if err := r.stateChecks(); err != nil {
		return nil, err
	}
	if opts.Deep {
		if err := r.deep(); err != nil {
			return nil, err
		}
		if err := r.sinkFiles(); err != nil {
			return nil, err
		}
	}
	r.broker()
	r.delta()
	sortFindings(r.findings)
	if r.findings == nil {
		r.findings = []Finding{}
	}
	nc, err := notChecked(ctx, cp, opts, sinkLatest != nil || opts.DeltaSink != nil)
	if err != nil {
		return nil, err
	}
	return &Report{Findings: r.findings, Restart: r.res, NotChecked: nc}, nil
}

type runner struct {
	ctx  context.Context
	cp   *checkpoint.Checkpoint
	opts Options
	res  *recovery.Result
	// assess is res with the gaps and the other engine's restart (the switch-off trap).
	assess *recovery.Assessment
	loc    string

	L, C       int64
	hasL, hasC bool

	findings []Finding
	// listing is state/ as listed for the planner, nil without state/.
	listing *state.Listing
	// reported holds paths already covered by a finding, so the cheap and deep file checks do
	// not report the same damaged file twice.
	reported map[string]bool
}

func (r *runner) add(f Finding) {
	c, ok := Lookup(f.Code)
	if !ok {
		panic("doctor: unregistered code " + f.Code) // a programming error, caught by any test
	}
	if f.Explanation == "" {
		f.Explanation = firstParagraph(c.Explanation)
	}
	if f.Files == nil {
		f.Files = []string{}
	}
	if f.Commands == nil {
		f.Commands = []string{}
	}
	if f.Path != "" {
		r.reported[f.Path] = true
	}
	r.findings = append(r.findings, f)
}

// cmd renders a ckpt command line for this checkpoint.
func (r *runner) cmd(sub string, extra ...string) string {
	parts := []string{"ckpt", sub, shell.Quote(r.loc)}
	parts = append(parts, extra...)
	return strings.Join(parts, " ")
}

// repairCmd passes --sink on, so that repair refuses to delete offsets the sink already has.
func (r *runner) repairCmd() string {
	if r.opts.SinkLocation != "" {
		return r.cmd("repair", r.sinkFlag(), shell.Quote(r.opts.SinkLocation), "--execute")
	}
	return r.cmd("repair", "--execute")
}

func (r *runner) replayCmd() string {
	if r.opts.SinkLocation != "" {
		return r.cmd("replay", r.sinkFlag(), shell.Quote(r.opts.SinkLocation))
	}
	return r.cmd("replay")
}

// sinkFlag is the flag that names the sink: --delta-sink for a Delta sink, else --sink.
func (r *runner) sinkFlag() string {
	if r.opts.DeltaSink != nil || r.opts.SinkKind == recovery.SinkKindDelta {
		return "--delta-sink"
	}
	return "--sink"
}

// sinkLatest reads the file sink's latest batch id from one listing.
func (r *runner) sinkLatest() (*int64, error) {
	if r.opts.SinkLatest != nil {
		return r.opts.SinkLatest, nil
	}
	if r.opts.Sink == nil {
		return nil, nil
	}
	latest, ok, err := sinklog.LatestAt(r.ctx, r.opts.Sink)
	if err != nil {
		return nil, fmt.Errorf("read the file sink log: %w", err)
	}
	if !ok {
		return ptr(int64(-1)), nil
	}
	return &latest, nil
}

// sparkError renders the planner's failure as Spark prints it: ERROR driver-log lines, then the
// exception.
func sparkError(res *recovery.Result, withLog bool) *string {
	if !res.Failed() {
		return nil
	}
	var lines []string
	if withLog {
		for _, l := range res.DriverLog {
			if strings.HasPrefix(l, "ERROR ") {
				lines = append(lines, l)
			}
		}
	}
	exc := exceptionLine(res)
	if res.ErrorInexact {
		// Spark's own text (a JSON library's exception, say) is not reproduced; a runbook
		// matching on sparkError must know.
		exc = "(not Spark's exact text) " + exc
	}
	lines = append(lines, exc)
	s := strings.Join(lines, "\n")
	return &s
}

func exceptionLine(res *recovery.Result) string {
	if res.Exception != "" {
		return res.Exception + ": " + res.ErrorText()
	}
	return res.ErrorText()
}

// firstParagraph is the opening paragraph of a code's explanation, unwrapped to one line: the
// per-finding explanation when a check has nothing more specific to say.
func firstParagraph(s string) string {
	p, _, _ := strings.Cut(s, "\n\n")
	return strings.Join(strings.Fields(p), " ")
}

// ids renders batch ids compactly: "3, 5..9".
func ids(list []int64) string {
	var parts []string
	for i := 0; i < len(list); {
		j := i
		for j+1 < len(list) && list[j+1] == list[j]+1 {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, fmt.Sprint(list[i]))
		case j == i+1:
			parts = append(parts, fmt.Sprint(list[i]), fmt.Sprint(list[j]))
		default:
			parts = append(parts, fmt.Sprintf("%d..%d", list[i], list[j]))
		}
		i = j + 1
	}
	if len(parts) > maxListed {
		parts = append(parts[:maxListed], fmt.Sprintf("… (%d ranges)", len(parts)))
	}
	return strings.Join(parts, ", ")
}

// capList bounds a file list and says how many were left out.
func capList(files []string) ([]string, string) {
	if len(files) <= maxListed {
		return files, ""
	}
	return files[:maxListed], fmt.Sprintf(" (%d files; the first %d are listed)", len(files), maxListed)
}

// parseErr returns the *logformat.Error of a cached read, nil when the file parsed.
func parseErr(err error) *logformat.Error {
	var le *logformat.Error
	if errors.As(err, &le) {
		return le
	}
	return nil
}

// describe says what is wrong with a file in plain words.
func describe(le *logformat.Error) string {
	switch le.Kind {
	case logformat.KindEmpty:
		return "is empty"
	case logformat.KindMissingMetadata:
		return "holds only its version line"
	case logformat.KindMalformedVersion:
		return "has a malformed version header (" + le.Got + ")"
	case logformat.KindUnsupportedVersion:
		return fmt.Sprintf("has format version v%d, newer than any Spark release writes", le.Version)
	case logformat.KindBadJSON:
		at := ""
		if le.Line > 0 {
			at = fmt.Sprintf(" at line %d", le.Line)
		}
		return fmt.Sprintf("is not valid JSON%s (expected %s, got %s): truncated or edited", at, le.Expected, le.Got)
	case logformat.KindBlankLine:
		return fmt.Sprintf("has an empty line %d", le.Line)
	case logformat.KindLineTooLong:
		if le.Line > 0 {
			return fmt.Sprintf("has a line %d longer than any real log line (expected %s, got %s): corrupt", le.Line, le.Expected, le.Got)
		}
		return fmt.Sprintf("is larger than any real log file (expected %s, got %s): corrupt", le.Expected, le.Got)
	}
	if le.Line > 0 {
		return fmt.Sprintf("cannot be parsed at line %d (expected %s, got %s)", le.Line, le.Expected, le.Got)
	}
	return fmt.Sprintf("cannot be parsed (expected %s, got %s)", le.Expected, le.Got)
}

// plural renders "1 source", "2 sources".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// isNotExist reports a missing file.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
