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
	d := &Dedup{EventTime: -1}
	flag, list := "--drop-duplicates", r.DropDuplicates
	if len(r.DropDuplicatesWithinWatermark) > 0 {
		flag, list, d.WithinWatermark = "--drop-duplicates-within-watermark", r.DropDuplicatesWithinWatermark, true
		if len(r.DropDuplicates) > 0 {
			bad("--drop-duplicates with --drop-duplicates-within-watermark: ckpt run runs one stateful operator per query")
		}
	}
	for _, name := range transform.SplitList(list) {
		ix := slices.IndexFunc(cols, func(c transform.Column) bool { return c.Name == name })
		if ix < 0 {
			var names []string
			for _, c := range cols {
				names = append(names, c.Name)
			}
			// Spark: Cannot resolve column name "x" among (…); ckpt names the flag too.
			bad("%s %q: not a column of the query (columns: %s); name a --select column, as Spark's dropDuplicates names columns", flag, name, strings.Join(names, ", "))
			continue
		}
		if slices.Contains(d.Columns, ix) {
			bad("%s: column %q given twice", flag, name)
			continue
		}
		switch cols[ix].Kind {
		case transform.KindAny:
			bad("%s %q: the column's type is not known; cast it in --select, e.g. string(…), int(…), float(…)", flag, name)
		case transform.KindHeaders:
			bad("%s %q: deduplicating by headers is not supported", flag, name)
		}
		d.Columns = append(d.Columns, ix)
	}
	if len(d.Columns) == 0 {
		bad("%s needs at least one column", flag)
	}
	resolveDedupWatermark(r, d, cols, flag, bad)
	if r.Sink == SinkFile && r.OutputMode == OutputUpdate {
		// Spark's file sink takes append only (FileStreamSink).
		bad("Data source %s does not support Update output mode (Spark's file sink writes append only: use --output-mode append)", r.FileFormat)
	}
	if r.AsyncProgressTracking {
		bad("async progress tracking with a stateful query: ckpt run does not support it yet")
	}
	return d
}

// resolveDedupWatermark parses --watermark for a deduplication: dropDuplicates evicts by the
// event-time column among its keys (StreamingDeduplicateExec); dropDuplicatesWithinWatermark
// needs the event-time column among the query's columns (Spark finds it in its input) and a
// watermark at all.
func resolveDedupWatermark(r *Resolved, d *Dedup, cols []transform.Column, flag string, bad func(string, ...any)) {
	for _, p := range r.resolveWatermark() {
		bad("%s", p)
	}
	if r.WatermarkColumn == "" {
		if d.WithinWatermark && r.Watermark == "" {
			// Spark refuses it too; its text is not checked here.
			bad("%s needs --watermark timestamp=DELAY: keys are forgotten by the watermark", flag)
		}
		return
	}
	ix := slices.IndexFunc(cols, func(c transform.Column) bool { return c.Name == r.WatermarkColumn })
	if ix < 0 || cols[ix].Kind != transform.KindTimestamp {
		bad("--watermark %q with %s: select the Kafka column %s unchanged (--select %s), as Spark's withWatermark marks that column", r.Watermark, flag, r.WatermarkColumn, r.WatermarkColumn)
		return
	}
	if d.WithinWatermark {
		return // the expiry is computed from the row's event time, not from a key column
	}
	if d.EventTime = slices.Index(d.Columns, ix); d.EventTime < 0 {
		bad("--watermark %q with --drop-duplicates not naming %s: not supported yet (Spark would keep every key); add %s to --drop-duplicates", r.Watermark, r.WatermarkColumn, r.WatermarkColumn)
	}
}
