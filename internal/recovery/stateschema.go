package recovery

import "fmt"

// Spark's texts for a state schema file that is not the query's (testdata/spark-state-swap:
// a schema file swapped for another operator's, restarted on 3.5.7, 4.0.0, 4.1.1 and 4.2.0).
// Spark compares the schemas the query's stateful operator has with the file's when the batch
// is planned (4.x) or the store is loaded (3.5), keys first; the file's schemas are in the
// checkpoint, the query's are not, so their place in the text is QueryKeySchema and
// QueryValueSchema.

// The query's schemas in StateSchemaError's text: Spark prints them there.
const (
	QueryKeySchema   = "<the query's key schema>"
	QueryValueSchema = "<the query's value schema>"
)

// StateSchemaError is the exception (class and message) a restart of Spark sparkVersion fails
// with when the key schema (key true) or only the value schema of the query's stateful
// operator does not match the state schema file, whose schemas, as DataType.toString prints
// them, are fileKey and fileValue. An unknown version gives 4.x's text.
func StateSchemaError(sparkVersion string, key bool, fileKey, fileValue string) (exception, message string) {
	if r, err := parseRelease(sparkVersion); err == nil && !r.atLeast(4, 0) {
		return "org.apache.spark.sql.execution.streaming.state.StateSchemaNotCompatible",
			"Provided schema doesn't match to the schema for existing state! Please note that Spark allow difference of field name: check count of fields and data type of each field.\n" +
				"- Provided key schema: " + QueryKeySchema + "\n" +
				"- Existing key schema: " + fileKey + "\n" +
				"- Provided value schema: " + QueryValueSchema + "\n" +
				"- Existing value schema: " + fileValue + "\n" +
				"If you want to force running query without schema validation, please set spark.sql.streaming.stateStore.stateSchemaCheck to false.\n" +
				"Please note running query with incompatible schema could cause indeterministic behavior."
	}
	what, class, existing, query := "value", "StateStoreValueSchemaNotCompatible", fileValue, QueryValueSchema
	if key {
		what, class, existing, query = "key", "StateStoreKeySchemaNotCompatible", fileKey, QueryKeySchema
	}
	cond := "STATE_STORE_" + map[bool]string{true: "KEY", false: "VALUE"}[key] + "_SCHEMA_NOT_COMPATIBLE"
	return "org.apache.spark.sql.execution.streaming.state." + class,
		"[" + cond + "] Provided " + what + " schema does not match existing state " + what + " schema.\n" +
			"Please check number and type of fields.\n" +
			"Existing " + what + "_schema=" + existing + " and new " + what + "_schema=" + query + ".\n" +
			"If you want to force running the query without schema validation, please set spark.sql.streaming.stateStore.stateSchemaCheck to false.\n" +
			"However, please note that running the query with incompatible schema could cause non-deterministic behavior. SQLSTATE: XXKST"
}

// ReasonStateSchemaMismatch: the rows of a store do not fit its state schema file
// (StateStore.Schema), so the file's schemas are not the query's and Spark's schema check
// fails the restart (StateSchemaError). FailedFile: the schema file.
const ReasonStateSchemaMismatch = "state-schema-mismatch"

// StateSchemaFit is what reading the first rows of the version the restart loads against the
// store's schema file found (internal/state fills it with --deep); nil when every row read fits,
// or the rows were not read.
type StateSchemaFit struct {
	// File is the schema file; Partition the partition of the first row that does not fit,
	// Detail what did not fit (for messages).
	File      string
	Partition int
	Detail    string
	// KeyMisfit: a key is not a row of the key schema. ValueMisfit: the keys fit and a value is
	// not a row of the value schema.
	KeyMisfit, ValueMisfit bool
	// DedupValue: that value is a row of a dropDuplicates store's value schema (one null field).
	DedupValue bool
	// NarrowKeys: the keys fit byte for byte but hold an int or a date where the file's key
	// schema says timestamp or double (statefmt.NarrowInWide).
	NarrowKeys bool
	// KeySchema and ValueSchema are the file's schemas as Spark prints them (DataType.toString).
	KeySchema, ValueSchema string
}

// StateSchemaVerdict is the planner's answer for a store whose rows do not fit its schema file
// (StateLoad.Schemas).
type StateSchemaVerdict struct {
	Operator  int64  `json:"operator"`
	Store     string `json:"store"`
	File      string `json:"file"`
	Partition int    `json:"partition"`
	Detail    string `json:"detail"`
	// Fails says that Spark's schema check fails the restart; false for a dropDuplicates
	// store whose values misfit (Spark does not compare its value schema): it resumes.
	Fails bool `json:"fails"`
	// Key says that Spark names the key schema: a key misfits, or the keys are narrower
	// values than the key schema says (NarrowKeys), since Spark compares keys first.
	Key        bool `json:"key"`
	NarrowKeys bool `json:"narrowKeys,omitempty"`
	// Exception and Error are Spark's schema exception (StateSchemaError), "" when it resumes.
	Exception string `json:"exception,omitempty"`
	Error     string `json:"error,omitempty"`
}

// schemaVerdict decides what Spark's schema check does with st's schema file; nil when its
// rows fit (or were not read).
func (p *planner) schemaVerdict(op StateOperator, st StateStore) *StateSchemaVerdict {
	f := st.Schema
	if f == nil || (!f.KeyMisfit && !f.ValueMisfit) {
		return nil
	}
	v := &StateSchemaVerdict{Operator: op.ID, Store: st.Name, File: f.File, Partition: f.Partition, Detail: f.Detail}
	if !f.KeyMisfit && f.DedupValue {
		// A dropDuplicates store's rows, whose value schema Spark does not compare
		// (testdata/spark-state-swap: dedup-with-agg-schema resumes on 3.5.7, 4.1.1, 4.2.0).
		return v
	}
	// Keys that fit but hold narrower values than the file says: the file's key schema is
	// not the query's either, and Spark compares keys first (agg-with-ntz-schema).
	v.Fails, v.Key, v.NarrowKeys = true, f.KeyMisfit || f.NarrowKeys, !f.KeyMisfit && f.NarrowKeys
	v.Exception, v.Error = StateSchemaError(p.cfg.version(), v.Key, f.KeySchema, f.ValueSchema)
	return v
}

// schemaFailure is the query's failure on v: 4.x checks the schemas when it plans the batch
// and throws the schema exception itself; 3.5 checks when a task gets its store, the
// lowest partition's first, and the job fails around it.
func (p *planner) schemaFailure(v *StateSchemaVerdict, task int) sparkFailure {
	own := sparkFailure{exception: v.Exception, message: v.Error}
	if p.rel.atLeast(4, 0) {
		return own
	}
	return sparkFailure{exception: excSpark, cause: &own,
		message: fmt.Sprintf("Job aborted due to stage failure: Task %d in stage <stage> failed 1 times, most recent failure: Lost task %d.0 in stage <stage> (TID <tid>) (<host> executor driver): %s: %s",
			task, task, v.Exception, v.Error)}
}
