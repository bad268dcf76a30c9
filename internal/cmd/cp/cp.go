// Package cp implements `ckpt cp`: copy a checkpoint (and its file sink's output) to another
// location or store, rewriting the absolute paths in Spark's logs.
package cp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/transfer"
)

// Options are the inputs of `ckpt cp`, separate from cobra so tests can call run.
type Options struct {
	IO        *iostreams.IOStreams
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)
	Now       func() time.Time
	Version   string

	Src, Dst string
	// Sink and SinkDst are a file sink's output directory and where it goes ("": no sink).
	Sink, SinkDst string
	// Rewrites are the --rewrite-prefix OLD=NEW pairs (default none: logs are copied as they are).
	Rewrites []transfer.Rewrite
	// Resume continues a partial copy (default false: the destination must be empty).
	Resume bool
	// Parallelism is how many files are copied at once (default 4).
	Parallelism int
	Format      render.Format
}

const long = `Copy a checkpoint to another location or store (local path, s3://…, any store ckpt opens),
into an empty destination, writing every file once (create-only) and never changing the source.

Spark's logs hold absolute paths: a file sink's _spark_metadata entries and a file source's
sources/<i>/N entries. --rewrite-prefix OLD=NEW (repeatable, longest OLD first) rewrites them in the
copy, as Spark would have written them there; every other byte is copied as it is. The Hadoop .crc
files of rewritten logs are not copied (their checksums are of the old bytes). With --sink OUTPUT
--sink-dst DIR the sink's output and its log are copied too.

Then it checks the copy: every rewritten file source path must exist (each is looked up on its
store), the copied sink's live files must be in --sink-dst (ckpt sink verify), and doctor runs on the
copied checkpoint (--deep, with the copied sink). ckpt's own _ckpt directory (journals, locks,
liveness) is not copied.

A destination inside a source (either pair's), two destinations at one place, or one inside a
Spark directory of the other copy (offsets/, commits/, sources/, state/, _spark_metadata/) is a
usage error. A symlinked directory of a local source is followed and copied as a directory, as
doctor and Spark read through it. Every rewritten sink entry must name a file in --sink-dst.

An interrupted copy continues with --resume: files already there with the right bytes are kept,
ckpt's own temporary files left by the killed run are removed, anything else is refused.

Exit codes: 0 copied and checked, 1 failed or refused, 2 usage error, 3 copied, but a check found an
error (a rewritten path missing, a rewritten sink entry outside --sink-dst, a sink problem, a doctor
error).`

// NewCmd builds `ckpt cp`. runF replaces run in tests of the wiring.
func NewCmd(env *cli.Env, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: env.IO, OpenStore: env.OpenStore, Now: env.Now, Version: env.Version}
	var output string
	var rewrites []string
	cmd := &cobra.Command{
		Use:   "cp SRC DST [--rewrite-prefix OLD=NEW ...] [--sink OUTPUT --sink-dst DIR]",
		Short: "Copy a checkpoint (and its file sink) elsewhere, rewriting the paths in Spark's logs",
		Long:  long,
		Example: `  ckpt cp /data/ckpt/orders s3://bucket/ckpt/orders
  ckpt cp /data/ckpt/q s3://b/ckpt/q --sink /data/out --sink-dst s3://b/out \
      --rewrite-prefix file:/data/out=s3a://b/out --rewrite-prefix file:/data/in=s3a://b/in
  ckpt cp /data/ckpt/q s3://b/ckpt/q --resume`,
		Args: cli.ExactArgs(2, "a source and a destination"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Src, opts.Dst = args[0], args[1]
			f, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			opts.Format = f
			for _, r := range rewrites {
				rw, err := transfer.ParseRewrite(r)
				if err != nil {
					return exitcode.UsageError(err)
				}
				opts.Rewrites = append(opts.Rewrites, rw)
			}
			if (opts.Sink == "") != (opts.SinkDst == "") {
				return exitcode.UsageError(errors.New("--sink and --sink-dst go together"))
			}
			if opts.Parallelism < 1 {
				return exitcode.UsageError(fmt.Errorf("--parallelism %d: want 1 or more", opts.Parallelism))
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	cli.AddOutputFlag(cmd, &output)
	fl := cmd.Flags()
	fl.StringArrayVar(&rewrites, "rewrite-prefix", nil, "`OLD=NEW`: logged paths starting with OLD start with NEW in the copy (repeatable)")
	fl.StringVar(&opts.Sink, "sink", "", "a file sink's output `DIR` (with _spark_metadata) to copy too")
	fl.StringVar(&opts.SinkDst, "sink-dst", "", "the empty `DIR` the sink's output goes to")
	fl.BoolVar(&opts.Resume, "resume", false, "continue a partial copy made by ckpt cp")
	fl.IntVar(&opts.Parallelism, "parallelism", 4, "copy `N` files at once")
	return cmd
}

func run(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	open := func(uri string) (storage.Store, error) { return opts.OpenStore(ctx, uri) }
	pairs := []transfer.Pair{}
	for _, p := range [][3]string{{transfer.KindCheckpoint, opts.Src, opts.Dst}, {transfer.KindSink, opts.Sink, opts.SinkDst}} {
		if p[1] == "" {
			continue
		}
		src, err := open(p[1])
		if err != nil {
			return err
		}
		if p[0] == transfer.KindCheckpoint {
			// Copying a typo or a parent folder would copy nothing, or the wrong thing. A file
			// sink's output given alone is copied as a sink (its log rewritten like --sink's).
			if _, err := checkpoint.Require(ctx, src, checkpoint.RequireOptions{Command: "ckpt cp"}); err != nil {
				if loc, derr := checkpoint.Detect(ctx, src); derr != nil || loc.Kind != checkpoint.KindSinkOutput {
					return err
				}
				p[0] = transfer.KindSink
			}
		}
		dst, err := open(p[2])
		if err != nil {
			return err
		}
		pairs = append(pairs, transfer.Pair{Kind: p[0], Src: src, Dst: dst})
	}
	// Every destination against every source and the other destination's logs, before anything
	// is written.
	if err := transfer.CheckLayout(pairs); err != nil {
		return exitcode.UsageError(err)
	}
	if opts.Sink != "" && sinklog.Locate(opts.Sink) == "" {
		return exitcode.UsageError(fmt.Errorf("--sink %s: give the output directory, not its _spark_metadata", opts.Sink))
	}
	bar := newProgress(opts.IO)
	res, err := transfer.Copy(ctx, pairs, transfer.Options{
		Rewrites: opts.Rewrites, Resume: opts.Resume, Parallelism: opts.Parallelism,
		Progress: bar.update, Exists: existsFunc(opts.OpenStore), Now: opts.Now, Tool: "ckpt " + opts.Version,
		Location: opts.Dst, SinkLocation: opts.SinkDst,
	})
	bar.finish()
	if err != nil {
		if res != nil && res.Files+res.Skipped > 0 {
			return fmt.Errorf("%w\nThe destination holds a partial copy (%d file(s)); continue it with the same command and --resume", err, res.Files+res.Skipped)
		}
		return err
	}
	failed := res.MissingCount > 0 || res.OutsideCount > 0 || (res.Doctor != nil && res.Doctor.Count(doctor.Error) > 0)
	if res.Sink != nil {
		for code, n := range res.Sink.Counts {
			if code != sinklog.CodeFileExtra && n > 0 {
				failed = true
			}
		}
	}
	if opts.Format == render.FormatJSON {
		if err := render.JSON(opts.IO.Out, res); err != nil {
			return err
		}
	} else {
		printResult(render.New(opts.IO), res)
	}
	if failed {
		return exitcode.Silent(exitcode.Findings)
	}
	return nil
}

func printResult(r *render.Renderer, res *transfer.Result) {
	for _, t := range res.Trees {
		r.Printf("Copied %s %s to %s: %d file(s), %d bytes\n", t.Kind, t.Source, t.Destination, t.Files, t.Bytes)
	}
	if res.Skipped > 0 {
		r.Printf("Resumed: %d file(s) were already copied\n", res.Skipped)
	}
	if n := len(res.TempsRemoved); n > 0 {
		r.Printf("Resumed: removed %d temporary file(s) the interrupted run left (%s)\n", n, safe(strings.Join(res.TempsRemoved, ", ")))
	}
	for _, l := range res.Links {
		r.Printf("Followed: %s is a symlink to a directory; its files are copied as a directory\n", safe(l))
	}
	for _, w := range res.Warnings {
		r.Printf("%s %s\n", r.Warn("warning:"), w)
	}
	r.Printf("Rewritten: %d entr(ies) in %d log file(s)", res.RewrittenEntries, res.RewrittenFiles)
	if res.Unrewritten > 0 {
		r.Printf("; %s %d entr(ies) matched no --rewrite-prefix and still name their old place", r.Warn("warning:"), res.Unrewritten)
	}
	r.Println()
	if len(res.ChecksumsDropped) > 0 {
		r.Printf("Not copied: %d checksum file(s) of rewritten logs\n", len(res.ChecksumsDropped))
	}
	if res.Unchecked > 0 {
		r.Printf("%s %d rewritten path(s) could not be checked (see the warning above)\n", r.Warn("unchecked:"), res.Unchecked)
	}
	if res.Checked > 0 {
		if res.MissingCount == 0 {
			r.Printf("%s all %d rewritten file source path(s) exist\n", r.Good("OK:"), res.Checked)
		} else {
			r.Printf("%s %d of %d rewritten file source path(s) do not exist:\n", r.Bad("missing:"), res.MissingCount, res.Checked)
			for _, m := range res.Missing {
				r.Printf("  %s (in %s)\n", m.Path, m.LogFile)
			}
		}
	}
	if res.OutsideCount > 0 {
		r.Printf("%s %d rewritten sink entr(ies) do not name a file in the sink's destination; readers of the copied log would look elsewhere:\n", r.Bad("outside:"), res.OutsideCount)
		for _, m := range res.Outside {
			r.Printf("  %s (in %s)\n", safe(m.Path), safe(m.LogFile))
		}
	}
	if v := res.Sink; v != nil {
		if v.OK() && res.OutsideCount == 0 {
			r.Printf("%s the copied sink's %d live file(s) are all in the destination\n", r.Good("OK:"), v.Live)
		} else {
			var parts []string
			for _, code := range []string{sinklog.CodeLogBatchMissing, sinklog.CodeCorruptLogFile, sinklog.CodeEntryOutside,
				sinklog.CodeFileMissing, sinklog.CodeFileSizeMismatch, sinklog.CodeFileExtra} {
				if n := v.Counts[code]; n > 0 {
					parts = append(parts, fmt.Sprintf("%s %d", code, n))
				}
			}
			base := v.Base
			if v.BaseGuessed {
				base += " (the entries name another location: is a --rewrite-prefix missing?)"
			}
			r.Printf("%s the copied sink's log resolves against %s: %s\n", r.Warn("sink:"), base, strings.Join(parts, ", "))
		}
	}
	if rep := res.Doctor; rep != nil {
		if len(rep.Findings) == 0 {
			r.Printf("%s doctor finds nothing in the copy\n", r.Good("OK:"))
			return
		}
		r.Printf("doctor on the copy:\n")
		for _, f := range rep.Findings {
			r.Printf("  %s %s: %s\n", f.Severity, f.Code, f.Message)
		}
	}
}

// existsFunc looks a logged path up on the store it names: "file:/x/y" on local disk, s3a:// and
// s3n:// as s3://, any other scheme as ckpt opens it. Stores are opened once per directory.
func existsFunc(openStore func(ctx context.Context, uri string) (storage.Store, error)) func(ctx context.Context, p string) (bool, error) {
	var mu sync.Mutex
	stores := map[string]storage.Store{}
	return func(ctx context.Context, p string) (bool, error) {
		loc := sinklog.ParseLocation(p)
		uri := loc.String()
		i := strings.LastIndex(uri, "/")
		if i < 0 || i == len(uri)-1 {
			return false, nil
		}
		dir, name := uri[:i], uri[i+1:]
		if dir == "" {
			dir = "/"
		}
		mu.Lock()
		st, ok := stores[dir]
		mu.Unlock()
		if !ok {
			var err error
			if st, err = openStore(ctx, dir); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return false, nil
				}
				return false, err
			}
			mu.Lock()
			stores[dir] = st
			mu.Unlock()
		}
		_, err := st.Stat(ctx, name)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return err == nil, err
	}
}

// progress draws one line on stderr, only on a terminal, at most ten times a second.
type progress struct {
	w    io.Writer
	on   bool
	last time.Time
	mu   sync.Mutex
	drew bool
}

func newProgress(ios *iostreams.IOStreams) *progress {
	return &progress{w: ios.ErrOut, on: ios.IsStderrTTY()}
}

func (p *progress) update(pr transfer.Progress) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond && pr.Files != pr.TotalFiles {
		return
	}
	p.last = now
	pct := 100.0
	if pr.TotalBytes > 0 {
		pct = float64(pr.Bytes) * 100 / float64(pr.TotalBytes)
	}
	fmt.Fprintf(p.w, "\r\x1b[Kcopying: %d/%d files, %s/%s (%.0f%%)", pr.Files, pr.TotalFiles, human(pr.Bytes), human(pr.TotalBytes), pct)
	p.drew = true
}

func (p *progress) finish() {
	if p.drew {
		fmt.Fprintln(p.w)
	}
}

func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// safe is s for the terminal: quoted with Go's escapes when it holds anything unprintable (a
// control sequence in a file name must not reach the terminal raw).
func safe(s string) string {
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
