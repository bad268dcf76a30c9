package recovery

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
