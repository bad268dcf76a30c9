package query

import (
	"fmt"
	"maps"
	"slices"
)

// Spark's refusals of async progress tracking (AsyncProgressTrackingMicroBatchExecution
// .validateAndGetTrigger), in the order Spark checks them: the sink, then the trigger. This is
// their one home: Validate, ckpt run's --async-switch-off and the engine's switch-off advice use
// them.
const (
	AsyncOnceTrigger         = "Async progress tracking cannot be used with Once trigger"
	AsyncAvailableNowTrigger = "Async progress tracking cannot be used with AvailableNow trigger"
)

// AsyncFileSink is Spark's refusal of async progress tracking for a file sink writing to path.
func AsyncFileSink(path string) string {
	return fmt.Sprintf("Sink FileSink[%s] does not support async progress tracking", path)
}

// AsyncTriggerRefusal is Spark's refusal of async progress tracking for a trigger kind, "" when
// the trigger allows it.
func AsyncTriggerRefusal(k TriggerKind) string {
	switch k {
	case TriggerOnce:
		return AsyncOnceTrigger
	case TriggerAvailableNow:
		return AsyncAvailableNowTrigger
	}
	return ""
}

// AsyncRefusals are Spark's refusals of running r with async progress tracking, in Spark's
// order; none when it may run so.
func AsyncRefusals(r *Resolved) []string {
	var out []string
	if r.Sink == SinkFile {
		out = append(out, AsyncFileSink(r.SinkPath))
	}
	if s := AsyncTriggerRefusal(r.Trigger.Kind); s != "" {
		out = append(out, s)
	}
	return out
}

// CheckSwitchOff validates a query for --async-switch-off, which runs it with async progress
// tracking for its first batches (so Spark's async refusals apply) and then without it (so the
// query itself must not enable it).
func CheckSwitchOff(r *Resolved) error {
	var errs []string
	if r.AsyncProgressTracking {
		errs = append(errs, "--async-switch-off switches async progress tracking off: remove the sink option "+OptAsyncProgressTracking+"=true")
	}
	for _, s := range AsyncRefusals(r) {
		msg := "--async-switch-off runs the query with async progress tracking: " + s
		if r.Sink == SinkFile && s == AsyncFileSink(r.SinkPath) {
			msg = "--async-switch-off runs the query with async progress tracking, and Spark refuses it for this sink: " + s + "; use ckpt repair instead"
		}
		errs = append(errs, msg)
	}
	if len(errs) > 0 {
		return &Error{Problems: errs}
	}
	return nil
}

// Clone returns a copy of q that shares nothing with it: Validate normalizes the query it is
// given (it removes the async options from the sink options, say), so a query validated ahead
// of time, before placeholders are replaced, is validated as a clone.
func (q *Query) Clone() *Query {
	c := *q
	c.Options = maps.Clone(q.Options)
	c.SinkOptions = maps.Clone(q.SinkOptions)
	c.Conf = maps.Clone(q.Conf)
	c.Select = slices.Clone(q.Select)
	return &c
}
