package purge

import (
	"context"
	"errors"
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/shell"
)

// stagingDoc is `ckpt purge --staging -o json`.
type stagingDoc struct {
	Checkpoint string               `json:"checkpoint"`
	Runs       []journal.StagingRun `json:"runs"`
	// Removed are the runs --execute removed.
	Removed []string `json:"removed"`
	Execute bool     `json:"execute"`
}

// runStaging is `ckpt purge --staging`: the runs under _ckpt/staging, which are ckpt's own
// copies of new state files (no part of the checkpoint Spark reads), each judged; --execute
// removes the stale ones (no process stages into them, no journal places them).
func runStaging(ctx context.Context, opts *Options) error {
	store, err := opts.OpenStore(ctx, opts.Checkpoint)
	if err != nil {
		return err
	}
	runs, err := journal.StagingRuns(ctx, store)
	if err != nil {
		return err
	}
	doc := &stagingDoc{Checkpoint: store.URI(), Runs: runs, Removed: []string{}, Execute: opts.Apply.Execute}
	if doc.Runs == nil {
		doc.Runs = []journal.StagingRun{}
	}
	r := render.New(opts.IO)
	jsonOut := opts.Output == render.FormatJSON
	stale := 0
	for _, run := range runs {
		if run.Stale() {
			stale++
		}
	}
	if !jsonOut {
		printStaging(r, doc, opts)
	}
	if opts.Apply.Execute && stale > 0 {
		if !opts.Apply.Yes {
			if jsonOut || !opts.IO.CanPrompt() {
				return exitcode.UsageError(errors.New("--execute needs --yes when stdin is not a terminal or the output is -o json (review the list first: run without --execute)"))
			}
			ok, err := opts.IO.Confirm(fmt.Sprintf("Remove %d staging run(s) from %s?", stale, store.URI()))
			if err != nil {
				return err
			}
			if !ok {
				fmt.Fprintln(opts.IO.Out, "Nothing changed.")
				return nil
			}
		}
		for _, run := range runs {
			if !run.Stale() {
				continue
			}
			if _, err := journal.RemoveStagingRun(ctx, store, run.Run); err != nil {
				return err
			}
			doc.Removed = append(doc.Removed, run.Run)
			if !jsonOut {
				r.Printf("Removed %s/%s (%s).\n", journal.StagingDir, render.Escape(run.Run), sizeOf(run))
			}
		}
	}
	if jsonOut {
		return render.JSON(opts.IO.Out, doc)
	}
	return nil
}

func printStaging(r *render.Renderer, doc *stagingDoc, opts *Options) {
	r.KV([][2]string{{"Checkpoint", render.Escape(doc.Checkpoint)}})
	r.Println()
	if len(doc.Runs) == 0 {
		r.Printf("Nothing staged: %s holds no run.\n", journal.StagingDir)
		return
	}
	r.Printf("%s holds new state files that `ckpt state repartition|edit --execute` streamed there before its journal; Spark never reads them.\n", journal.StagingDir)
	stale := 0
	for _, run := range doc.Runs {
		if run.Stale() {
			stale++
			r.Printf("  %s/%s: %s, stale (no ckpt stages into it, no journal places it)\n", journal.StagingDir, render.Escape(run.Run), sizeOf(run))
		} else {
			r.Printf("  %s/%s: %s, %s %s\n", journal.StagingDir, render.Escape(run.Run), sizeOf(run), r.Warn("stays:"), render.Escape(run.Keep))
		}
	}
	if stale > 0 && !opts.Apply.Execute {
		r.Printf("To remove the stale ones: ckpt purge %s --staging --execute\n", shell.Quote(opts.Checkpoint))
	}
}

func sizeOf(run journal.StagingRun) string {
	return fmt.Sprintf("%s, %s", files(len(run.Files)), bytes(run.Bytes))
}
