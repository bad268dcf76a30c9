package recovery_test

import (
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// The planner's rule for a store whose rows do not fit its schema file (the inventory's
// StateStore.Schema, as internal/state fills it): Spark compares key schemas first, does not
// compare a dropDuplicates store's value schema, and checks before it loads a store. The texts
// themselves are compared with Spark's restarts in internal/doctor (TestStateSchemaSwapMatchesSpark).
func TestStateSchemaVerdict(t *testing.T) {
	ck := memCheckpoint(t, committed(t))
	const keyS, valS = "StructType(StructField(k,StringType,true))", "StructType(StructField(__dummy__,NullType,true))"
	for _, c := range []struct {
		name      string
		spark     string
		fit       recovery.StateSchemaFit
		damaged   bool // partition 1 misses a delta too
		fails     bool
		exception string // of the result; "" when it resumes
		root      string
	}{
		{"key", "4.0", recovery.StateSchemaFit{KeyMisfit: true}, false, true,
			"org.apache.spark.sql.execution.streaming.state.StateStoreKeySchemaNotCompatible", "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE]"},
		{"value", "4.1", recovery.StateSchemaFit{ValueMisfit: true}, false, true,
			"org.apache.spark.sql.execution.streaming.state.StateStoreValueSchemaNotCompatible", "[STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE]"},
		{"value-narrow-keys", "4.2", recovery.StateSchemaFit{ValueMisfit: true, NarrowKeys: true}, false, true,
			"org.apache.spark.sql.execution.streaming.state.StateStoreKeySchemaNotCompatible", "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE]"},
		{"dedup-value", "4.1", recovery.StateSchemaFit{ValueMisfit: true, DedupValue: true, NarrowKeys: true}, false, false, "", ""},
		{"key-3.5", "3.5", recovery.StateSchemaFit{KeyMisfit: true}, false, true,
			"org.apache.spark.SparkException", "Provided schema doesn't match to the schema for existing state!"},
		{"before-damage", "4.0", recovery.StateSchemaFit{KeyMisfit: true}, true, true,
			"org.apache.spark.sql.execution.streaming.state.StateStoreKeySchemaNotCompatible", "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			inv := hdfsPartition(sf(5, "snapshot", nil))
			if c.damaged {
				inv = hdfsPartition(sf(3, "snapshot", nil), sf(5, "delta", nil))
			}
			fit := c.fit
			fit.File, fit.KeySchema, fit.ValueSchema, fit.Detail = "state/0/0/_metadata/schema", keyS, valS, "row 1 does not fit"
			inv.Operators[0].Stores[0].Schema = &fit
			res := mustPlan(t, ck, recovery.Options{SparkVersion: c.spark, State: &inv})
			if res.State == nil || len(res.State.Schemas) != 1 || res.State.Schemas[0].Fails != c.fails {
				t.Fatalf("state %+v", res.State)
			}
			if !c.fails {
				if res.Failed() {
					t.Errorf("a dropDuplicates store's values: fails with %s", deref(res.Error))
				}
				return
			}
			if !res.Failed() || res.Reason != recovery.ReasonStateSchemaMismatch || res.FailedFile != "state/0/0/_metadata/schema" {
				t.Fatalf("outcome %s reason %s file %s", res.Outcome, res.Reason, res.FailedFile)
			}
			if res.Exception != c.exception || res.RootCause == nil || !strings.HasPrefix(res.RootCause.Error, c.root) {
				t.Errorf("exception %s, root cause %+v", res.Exception, res.RootCause)
			}
			schema := keyS // the file's schema that Spark names
			if strings.Contains(c.root, "VALUE") {
				schema = valS
			}
			if !res.ErrorInexact || !strings.Contains(deref(res.Error), schema) {
				t.Errorf("error (inexact %v) %s", res.ErrorInexact, deref(res.Error))
			}
			if c.spark == "3.5" && !strings.HasPrefix(deref(res.Error), "Job aborted due to stage failure: Task 0 in stage <stage>") {
				t.Errorf("3.5: %s", deref(res.Error))
			}
		})
	}
	// Rows that fit, or were not read: no verdict, the restart resumes.
	inv := hdfsPartition(sf(5, "snapshot", nil))
	res := mustPlan(t, ck, recovery.Options{SparkVersion: "4.1", State: &inv})
	if res.Failed() || len(res.State.Schemas) != 0 {
		t.Errorf("no schema misfit: %s, %+v", res.Outcome, res.State.Schemas)
	}
}
