// Package state implements `ckpt state ls` and `ckpt state read`: the state stores of a
// checkpoint, listed and read without a JVM.
package state

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Options are the inputs of `ckpt state ls|read`, separate from cobra so tests call run.
type Options struct {
	IO *iostreams.IOStreams
	// OpenStore opens the location argument (cli.Env.OpenStore).
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)

	// Location is the checkpoint.
	Location string
	// Output is "table" or "json" (read: JSON lines).
	Output render.Format
	// Read selects `read`; false is `ls`.
	Read bool
	// Read is what `read` reads: --operator (required), --store (default "default"),
	// --partition (default -1: all), --version (default 0: the latest committed batch's),
	// --key NAME=VALUE (repeatable; default none), --changes (default false).
	ReadOptions state.ReadOptions
}

// NewCmd builds `ckpt state` with its ls and read subcommands. runF replaces run in tests of
// the flag wiring.
func NewCmd(env *cli.Env, runF func(*Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "List and read the state stores of a checkpoint (HDFS-backed and RocksDB), without a JVM",
		Long: `List and read the state stores of stateful operators (aggregations, dropDuplicates,
stream-stream joins, ...) under state/ of a checkpoint, without Spark.

  ckpt state ls CHECKPOINT      operators, stores, partitions, versions, provider, format, schema
  ckpt state read CHECKPOINT    the rows of one store, like spark.read.format("statestore")
  ckpt state repartition CHECKPOINT --partitions N
                                every operator's state rehashed to N partitions (journaled)

See docs/state.md.`,
	}
	cmd.AddCommand(newLs(env, runF), newRead(env, runF), newRepartition(env, nil), newEdit(env, nil))
	return cmd
}

func newLs(env *cli.Env, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: env.IO, OpenStore: env.OpenStore}
	var output string
	cmd := &cobra.Command{
		Use:   "ls CHECKPOINT",
		Short: "List the state stores: operators, stores, partitions, versions, format, schema, bytes",
		Long: `List every state store of a checkpoint: operator id and name, store name, provider
(hdfs or rocksdb), partitions, the versions on disk (version = batch id + 1), the checkpoint
format (2 when file names carry unique ids), files, SST files, bytes, and the key and value
schema Spark stored. Reads the listing of state/ and the small schema and metadata files.`,
		Example: `  ckpt state ls /data/checkpoints/orders
  ckpt state ls s3://bucket/ckpt/orders -o json`,
		Args: cli.ExactArgs(1, "a checkpoint location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Location = args[0]
			f, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			opts.Output = f
			if runF != nil {
				return runF(opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	cli.AddOutputFlag(cmd, &output)
	return cmd
}

func newRead(env *cli.Env, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: env.IO, OpenStore: env.OpenStore, Read: true}
	var output, budget string
	ro := &opts.ReadOptions
	cmd := &cobra.Command{
		Use:   "read CHECKPOINT --operator N",
		Short: "Read the rows of a state store (as Spark's statestore reader does), streamed",
		Long: `Read the rows of one state store: one row per key, with the key and value columns named
by the schema Spark stored, like spark.read.format("statestore"). The rows stream: the
newest snapshot (or zip) is never held in memory.

Memory holds the records of the deltas or changelogs after the base up to --memory-budget
(default 8MiB, or CKPT_STATE_MEMORY_BUDGET); past it they are sorted into runs in a
temporary directory under $TMPDIR (ckpt-state-read-*, removed when the read ends, interrupted
or not) and merged. The rows and their order are the same either way: the base's rows in its
order, then the rows the deltas put, sorted by key bytes.

The version read is the latest committed batch's (version = batch id + 1) unless --version
says otherwise. --changes reads only that version's delta or changelog: what that batch
changed (change_type update or delete), like Spark's readChangeFeed.

HDFS-backed stores are read from N.snapshot and N.delta files. RocksDB stores are read as
Spark loads them: the SST files the newest N.zip at or below the version lists (ckpt reads
RocksDB's table format itself, merging the files: the newest entry of a key wins), then the
changelogs after it. --changes needs the version's changelog. Output: a table, or JSON lines (-o json) with key, value and
partition_id (and batch_id, change_type with --changes).

transformWithState operators keep several state variables in one store: read one with
--state-var NAME (ckpt state ls lists them), or the timers with --timers. List state gives
a row per element (list_element), map state a row per entry (user_map_key, user_map_value);
--nested gives one row per grouping key (list_value, map_value), as Spark's reader does.`,
		Example: `  ckpt state read ./ckpt --operator 0
  ckpt state read ./ckpt --operator 0 --partition 3 --key userId=42 -o json
  ckpt state read ./ckpt --operator 0 --store left-keyToNumValues
  ckpt state read ./ckpt --operator 0 --version 12 --changes
  ckpt state read ./ckpt --operator 0 --state-var countState
  ckpt state read ./ckpt --operator 0 --state-var mapState --nested -o json`,
		Args: cli.ExactArgs(1, "a checkpoint location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Location = args[0]
			f, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			opts.Output = f
			if !cmd.Flags().Changed("operator") {
				return exitcode.UsageError(fmt.Errorf("ckpt state read needs --operator N (ckpt state ls lists them)"))
			}
			if ro.Version < 0 {
				return exitcode.UsageError(fmt.Errorf("--version %d: must be positive", ro.Version))
			}
			from := "--memory-budget "
			if !cmd.Flags().Changed("memory-budget") {
				from, budget = "CKPT_STATE_MEMORY_BUDGET=", ""
				if env.Getenv != nil {
					budget = env.Getenv("CKPT_STATE_MEMORY_BUDGET")
				}
			}
			if budget != "" {
				n, err := parseBytes(budget)
				if err != nil {
					return exitcode.UsageError(fmt.Errorf("%s%s: %v", from, render.EscapeText(budget), err))
				}
				ro.MemoryBudget = n
			}
			if runF != nil {
				return runF(opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	cli.AddOutputFlag(cmd, &output)
	fl := cmd.Flags()
	fl.Int64Var(&ro.Operator, "operator", 0, "operator id (required; see ckpt state ls)")
	fl.StringVar(&ro.Store, "store", state.DefaultStore, "store name (a join has four)")
	fl.IntVar(&ro.Partition, "partition", -1, "read one partition (default: all)")
	fl.Int64Var(&ro.Version, "version", 0, "state version = batch id + 1 (default: the latest committed batch's)")
	fl.StringArrayVar(&ro.Keys, "key", nil, "keep rows whose key field `NAME=VALUE` (repeatable; all must match)")
	fl.BoolVar(&ro.Changes, "changes", false, "read only the version's delta or changelog: what its batch changed")
	fl.StringVar(&ro.StateVar, "state-var", "", "transformWithState: the state variable `NAME` to read (Spark's stateVarName; ckpt state ls lists them)")
	fl.BoolVar(&ro.Timers, "timers", false, "transformWithState: read the registered timers (Spark's readRegisteredTimers)")
	fl.StringVar(&budget, "memory-budget", "", fmt.Sprintf("`SIZE` of the delta or changelog records held in memory before they are spilled to sorted runs in $TMPDIR (default %dMiB, or env CKPT_STATE_MEMORY_BUDGET)", state.DefaultMemoryBudget>>20))
	fl.BoolVar(&ro.Nested, "nested", false, "transformWithState list and map state: one row per grouping key, the list or map in it (Spark's flattenCollectionTypes=false)")
	return cmd
}

func run(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	st, err := opts.OpenStore(ctx, opts.Location)
	if err != nil {
		return err
	}
	loc, err := checkpoint.Require(ctx, st, checkpoint.RequireOptions{Command: "ckpt state " + map[bool]string{false: "ls", true: "read"}[opts.Read]})
	if err != nil {
		return err
	}
	l, err := state.Scan(ctx, st)
	if err != nil {
		return err
	}
	if !opts.Read {
		sums, err := state.Summarize(ctx, st, l)
		if err != nil {
			return err
		}
		return renderLs(opts, sums)
	}
	cp, err := checkpoint.LoadAt(ctx, st, loc) // the root listed once
	if err != nil {
		return err
	}
	r, err := state.NewReader(ctx, cp, l, opts.ReadOptions)
	if err != nil {
		return err
	}
	if opts.Output == render.FormatJSON {
		return r.WriteJSON(ctx, opts.IO.Out)
	}
	w := bufio.NewWriterSize(opts.IO.Out, 64<<10)
	defer w.Flush()
	return streamTable(ctx, w, r, opts.ReadOptions.Changes)
}

// streamTable writes rows as aligned columns, flushing every block of rows so that memory
// stays flat however many rows there are (columns align within a block).
func streamTable(ctx context.Context, w io.Writer, r *state.Reader, changes bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "PARTITION\tKEY\tVALUE"
	if changes {
		head = "PARTITION\tBATCH\tCHANGE\tKEY\tVALUE"
	}
	fmt.Fprintln(tw, head)
	n := 0
	err := r.Each(ctx, func(row *state.Row) error {
		cells := []string{strconv.Itoa(row.Partition)}
		if changes {
			cells = append(cells, strconv.FormatInt(row.BatchID, 10), row.ChangeType)
		}
		if row.HasSchema() {
			cells = append(cells, cell(row.Key()), cell(row.Value()))
		} else {
			cells = append(cells, statefmt.Text(row.RawKey), rawCell(row.RawValue))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
		if n++; n%512 == 0 {
			return tw.Flush()
		}
		return nil
	})
	if ferr := tw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func rawCell(raw []byte) string {
	if raw == nil {
		return "-"
	}
	return statefmt.Text(raw)
}

// cell renders a row as name=value pairs ("-" for none: a delete's value).
func cell(o *statefmt.Object) string {
	if o == nil {
		return "-"
	}
	parts := make([]string, len(o.Names))
	for i, n := range o.Names {
		parts[i] = n + "=" + statefmt.Text(o.Values[i])
	}
	return strings.Join(parts, " ")
}

func renderLs(opts *Options, sums []state.StoreSummary) error {
	if opts.Output == render.FormatJSON {
		return render.JSON(opts.IO.Out, sums)
	}
	r := render.New(opts.IO)
	if len(sums) == 0 {
		r.Println("no state stores under state/")
		return nil
	}
	t := render.Table{Headers: []string{"OP", "NAME", "STORE", "PROVIDER", "PARTS", "VERSIONS", "FORMAT", "FILES", "SSTS", "BYTES", "KEY", "VALUE"}}
	for _, s := range sums {
		versions := "-"
		if s.MaxVersion > 0 {
			versions = fmt.Sprintf("%d-%d", s.MinVersion, s.MaxVersion)
		}
		key, val := s.KeySchema, s.ValueSchema
		if s.SchemaError != "" {
			key, val = "(unreadable schema)", ""
		} else if len(s.StateVariables) > 0 {
			key, val = "(transformWithState: state variables below)", ""
		} else if key == "" {
			key, val = "(no schema)", ""
		}
		name := s.OperatorName
		if name == "" {
			name = "-"
		}
		t.Rows = append(t.Rows, []string{strconv.FormatInt(s.Operator, 10), name, s.Store, s.Provider, strconv.Itoa(s.Partitions),
			versions, "v" + strconv.Itoa(s.CheckpointFormat), strconv.Itoa(s.Files), strconv.Itoa(s.SSTs), strconv.FormatInt(s.Bytes, 10), key, val})
	}
	r.Table(t)
	for _, s := range sums {
		if len(s.StateVariables) == 0 {
			continue
		}
		r.Println("")
		r.Println(fmt.Sprintf("operator %d store %s: transformWithState state variables (read one with --state-var NAME, the timers with --timers)", s.Operator, render.Escape(s.Store)))
		vt := render.Table{Headers: []string{"STATE VARIABLE", "TYPE", "TTL", "KEY", "VALUE"}}
		for _, v := range s.StateVariables {
			vt.Rows = append(vt.Rows, []string{v.Name, v.Type, strconv.FormatBool(v.TTL), v.KeySchema, v.ValueSchema})
		}
		r.Table(vt)
	}
	return nil
}

// parseBytes reads a size: a number of bytes, optionally with a unit (KiB, MiB, GiB; KB, MB,
// GB; K, M, G are the binary ones).
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') {
		i--
	}
	mult := map[string]int64{"": 1, "B": 1, "K": 1 << 10, "KiB": 1 << 10, "KB": 1000, "M": 1 << 20, "MiB": 1 << 20, "MB": 1000_000,
		"G": 1 << 30, "GiB": 1 << 30, "GB": 1000_000_000}[strings.TrimSpace(t[i:])]
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || mult == 0 || n <= 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("want a positive size in bytes, such as 16MiB, 512KiB or 1GB")
	}
	return n * mult, nil
}
