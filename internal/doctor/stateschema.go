package doctor

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// CodeStateSchemaMismatch: a store's rows are not rows of its schema file (--deep).
const CodeStateSchemaMismatch = "state-schema-mismatch"

func init() { Codes = append(Codes, stateSchemaCode) }

// schemaErrorDoc is Spark's text of each release line for the code's page, the file's schemas
// and the query's left as placeholders.
func schemaErrorDoc() string {
	text := func(v string, key bool) string {
		exc, msg := recovery.StateSchemaError(v, key, "<the file's key schema>", "<the file's value schema>")
		return "```\n" + exc + ": " + msg + "\n```"
	}
	return "The key schema differs, Spark 3.5:\n\n" + text("3.5", true) +
		"\n\nSpark 4.0, 4.1 and 4.2:\n\n" + text("4.0", true) +
		"\n\nThe key schema is the same, the value schema differs (4.x; 3.5 prints its text above):\n\n" + text("4.0", false) +
		"\n\nSpark prints the file's schemas and the query's as `DataType.toString` does " +
		"(`StructType(StructField(k,StringType,true),…)`); the finding fills in the file's, and the query's, which the " +
		"checkpoint does not hold, stay placeholders. A dropDuplicates store whose file has another value schema " +
		"restarts: Spark does not check a deduplication store's value schema."
}

var stateSchemaCode = Code{
	ID:         CodeStateSchemaMismatch,
	Title:      "A state schema file does not describe its store's rows",
	Severities: []Severity{Error, Warning},
	Summary:    "The rows of the state version the restart loads are not rows of the store's schema file: wrong row sizes, offsets outside the row, another number of fields (found with --deep).",
	Explanation: `Spark writes the key and value schema of each stateful operator's store at the query's first batch
(` + "`state/<op>/0/[<store>/]_metadata/schema`" + `) and compares the query's schemas with it at every restart.
A schema file copied from another operator or another query (a restore that mixed checkpoints, a
hand-made copy) no longer describes the rows: every restart fails with Spark's schema error
(keys first: the value schema is compared only when the keys agree), and every reader of the
state, Spark's state data source and ` + "`ckpt state read`" + `, decodes the rows with the wrong layout.
` + "`--deep`" + ` reads the first rows of each partition of the version the restart loads and checks
them byte for byte against the file's schema as Spark's UnsafeRow writer lays them out (a row of
another schema with as many fields differs in the bytes above a narrow value, or in the size of
its variable part). Error when the keys do not fit, or the values do not fit and the store is
not a dropDuplicates store's (whose value schema Spark does not check: warning, the restart
resumes and only readers misread). When only the values misfit, Spark names the key schema
anyway if the keys, though they fit byte for byte, hold ints or dates where the file says
timestamp or double (no real timestamp lies in the first 72 minutes of 1970): the file's key
schema is then not the query's either. Spark 3.5 checks in the task that loads the store (the
query fails with "Job aborted due to stage failure" around it), 4.x when it plans the batch.
Observed on swapped copies of Spark-written checkpoints restarted by Spark 3.5.7, 4.0.0, 4.1.1
and 4.2.0 (` + "`testdata/spark-state-swap`" + `). transformWithState stores (schema v3) are not checked.
Whether the restart fails is the recovery planner's verdict (` + "`ckpt replay`" + ` says the same, reason
` + "`state-schema-mismatch`" + `): the restart line says it, and the finding takes its severity and text.`,
	SparkError: schemaErrorDoc(),
	Fix: `Put the operator's own schema file back (with its ` + "`.schema.crc`" + `): from a backup of this
checkpoint, or from a copy taken before the file was replaced. Setting
` + "`spark.sql.streaming.stateStore.stateSchemaCheck=false`" + ` does not repair anything: Spark then reads
the rows with the wrong schema.`,
}

// stateSchemaFit reports every store whose rows do not fit its schema file (Deep only: the
// first rows of each partition of the version the restart loads, read by state.WithState), with
// the planner's verdict (recovery.StateLoad.Schemas): doctor decides nothing about Spark's
// schema check itself.
func (r *runner) stateSchemaFit() error {
	if r.res.State == nil {
		return nil
	}
	for _, v := range r.res.State.Schemas {
		r.schemaMismatch(r.res.State.Version, v)
	}
	return nil
}

func (r *runner) schemaMismatch(version int64, v recovery.StateSchemaVerdict) {
	msg := fmt.Sprintf("operator %d store %s: the rows of state version %d are not rows of %s: %s", v.Operator, v.Store, version, v.File, v.Detail)
	f := r.stateFinding(CodeStateSchemaMismatch, Error, v.File, nil, msg)
	b := version - 1 // the batch that wrote the version
	f.Batch = &b
	if !v.Fails {
		f.Severity = Warning
		f.Message += "; the rows are a dropDuplicates store's, whose value schema Spark does not check: the restart resumes, readers misread"
		f.SparkError = nil
		r.add(f)
		return
	}
	if v.NarrowKeys {
		f.Message += "; the keys fit its key schema byte for byte but hold narrower values (an int or a date where it says timestamp or double), so the key schema differs too"
	}
	spark := v.Exception + ": " + v.Error
	f.SparkError = &spark
	r.add(f)
}
