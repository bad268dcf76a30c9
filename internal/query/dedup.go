package query

import (
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/transform"
)

// resolveDedup checks --drop-duplicates against the query's columns (the --select output, or
// the Kafka columns), as Spark's dropDuplicates(colNames) resolves names against its input's
// schema, and the rules Spark and ckpt run apply to a deduplicating query.
func resolveDedup(r *Resolved, bad func(string, ...any)) *Dedup {
	cols := r.Program.Columns()
	d := &Dedup{}
	for _, name := range transform.SplitList(r.DropDuplicates) {
		ix := slices.IndexFunc(cols, func(c transform.Column) bool { return c.Name == name })
		if ix < 0 {
			var names []string
			for _, c := range cols {
				names = append(names, c.Name)
			}
			// Spark: Cannot resolve column name "x" among (…); ckpt names the flag too.
			bad("--drop-duplicates %q: not a column of the query (columns: %s); name a --select column, as Spark's dropDuplicates names columns", name, strings.Join(names, ", "))
			continue
		}
		if slices.Contains(d.Columns, ix) {
			bad("--drop-duplicates: column %q given twice", name)
			continue
		}
		switch cols[ix].Kind {
		case transform.KindAny:
			bad("--drop-duplicates %q: the column's type is not known; cast it in --select, e.g. string(…), int(…), float(…)", name)
		case transform.KindHeaders:
			bad("--drop-duplicates %q: deduplicating by headers is not supported", name)
		}
		d.Columns = append(d.Columns, ix)
	}
	if len(d.Columns) == 0 {
		bad("--drop-duplicates needs at least one column")
	}
	if r.Sink == SinkFile && r.OutputMode == OutputUpdate {
		// Spark's file sink takes append only (FileStreamSink).
		bad("Data source %s does not support Update output mode (Spark's file sink writes append only: use --output-mode append)", r.FileFormat)
	}
	if r.AsyncProgressTracking {
		bad("async progress tracking with a stateful query: ckpt run does not support it yet")
	}
	return d
}
