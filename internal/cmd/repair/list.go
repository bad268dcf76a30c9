package repair

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/shell"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// journalEntry is one repair of a checkpoint, as `ckpt repair list` shows it.
type journalEntry struct {
	ID       string    `json:"id"`
	Created  time.Time `json:"created"`
	Strategy string    `json:"strategy"`
	// State is applied, undone or interrupted (a run that stopped half-way); Journal.State says
	// exactly where.
	State        string        `json:"state"`
	JournalState journal.State `json:"journalState"`
	Actions      int           `json:"actions"`
	Tool         string        `json:"tool"`
	Journal      string        `json:"journal"`
}

// summaryState folds the journal states into the three a person needs to choose from.
func summaryState(s journal.State) string {
	switch s {
	case journal.StateApplied, journal.StateDone:
		return "applied"
	case journal.StateUndone:
		return "undone"
	}
	return "interrupted"
}

// listJournals reads every repair journal under the checkpoint's _ckpt/repairs/, oldest first.
// A directory without a readable journal is skipped: it holds nothing undo could use.
func listJournals(ctx context.Context, cs storage.Store) ([]journalEntry, error) {
	entries, err := cs.List(ctx, journal.RepairsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var out []journalEntry
	for _, e := range entries {
		if !e.IsDir {
			continue
		}
		loc := journal.Location{Store: cs, Dir: storage.Join(journal.RepairsDir, path.Base(e.Path))}
		j, err := journal.Read(ctx, loc)
		if err != nil {
			continue
		}
		out = append(out, journalEntry{ID: j.ID, Created: j.Created, Strategy: string(j.Strategy), State: summaryState(j.State),
			JournalState: j.State, Actions: len(j.Actions), Tool: j.Tool, Journal: loc.URI()})
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Created.Before(out[b].Created) })
	return out, nil
}

func newListCmd(env *cli.Env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list CHECKPOINT",
		Short: "List the repairs of a checkpoint: when, which strategy, applied, undone or interrupted",
		Long: `List every repair journal of a checkpoint (under <checkpoint>/_ckpt/repairs/), oldest first:
when it ran, its strategy, its state (applied, undone, or interrupted: a run that stopped
half-way, which 'ckpt repair resume' finishes or 'ckpt repair undo' reverts), the number of
actions and the journal's location, to pass to 'ckpt repair undo'. The newest one not undone is
what 'ckpt repair undo CHECKPOINT --last' reverts. Journals kept elsewhere (--backup-dir) are
not listed.`,
		Example: `  ckpt repair list s3://bucket/checkpoints/orders
  ckpt repair undo s3://bucket/checkpoints/orders --last`,
		Args: cli.ExactArgs(1, "a checkpoint location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			cs, err := env.OpenStore(ctx, args[0])
			if err != nil {
				return err
			}
			list, err := listJournals(ctx, cs)
			if err != nil {
				return err
			}
			if f == render.FormatJSON {
				if list == nil {
					list = []journalEntry{}
				}
				return render.JSON(env.IO.Out, struct {
					Checkpoint string         `json:"checkpoint"`
					Repairs    []journalEntry `json:"repairs"`
				}{args[0], list})
			}
			r := render.New(env.IO)
			if len(list) == 0 {
				r.Printf("no repair journal under %s/%s/ (repairs with --backup-dir keep theirs there)\n", args[0], journal.RepairsDir)
				return nil
			}
			printJournals(r, list)
			r.Println()
			r.Println(r.Faint("Undo the newest one not undone: ckpt repair undo " + shell.Quote(args[0]) + " --last"))
			return nil
		},
	}
	cli.AddOutputFlag(cmd, &output)
	return cmd
}

func printJournals(r *render.Renderer, list []journalEntry) {
	rows := make([][]string, 0, len(list))
	for _, e := range list {
		state := e.State
		if state == "interrupted" {
			state = r.Warn(state + " (" + string(e.JournalState) + ")")
		}
		rows = append(rows, []string{e.Created.UTC().Format(time.RFC3339), orNone(e.Strategy), state, strconv.Itoa(e.Actions), e.Journal})
	}
	r.Table(render.Table{Headers: []string{"created", "strategy", "state", "actions", "journal"}, Rows: rows})
}

// lastJournal is the journal `undo CHECKPOINT --last` reverts: the newest one not undone. When
// every one is undone it returns the newest, which undo then reports as already undone.
func lastJournal(ctx context.Context, cs storage.Store, checkpoint string) (string, error) {
	list, err := listJournals(ctx, cs)
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "", exitcode.New(exitcode.Failure, fmt.Errorf("%w under %s/%s/ (a repair with --backup-dir keeps its journal there: pass that directory)", journal.ErrMissing, checkpoint, journal.RepairsDir))
	}
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].State != "undone" {
			return list[i].Journal, nil
		}
	}
	return list[len(list)-1].Journal, nil
}

// noJournalHint adds to "no repair journal" at a checkpoint the repairs it does have, and how to
// undo the newest: `repair undo CHECKPOINT` used to stop at the bare error.
func noJournalHint(ctx context.Context, opts *JournalOptions, err error) error {
	if !errors.Is(err, journal.ErrMissing) {
		return err
	}
	cs, oerr := opts.OpenStore(ctx, opts.Journal)
	if oerr != nil {
		return err
	}
	list, lerr := listJournals(ctx, cs)
	if lerr != nil || len(list) == 0 {
		return err
	}
	msg := fmt.Sprintf("%v\n%s is a checkpoint with %s:", err, opts.Journal, plural(len(list), "repair journal"))
	for _, e := range list {
		msg += fmt.Sprintf("\n  %s  %s  %s  %s", e.Created.UTC().Format(time.RFC3339), orNone(e.Strategy), e.State, e.Journal)
	}
	msg += fmt.Sprintf("\nundo the newest one not undone: ckpt repair %s %s --last", opts.Op, shell.Quote(opts.Journal))
	return exitcode.New(exitcode.Failure, errors.New(msg))
}
