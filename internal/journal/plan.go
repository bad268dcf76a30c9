package journal

import "github.com/ckpt-dev/ckpt/internal/recovery"

// Strategy names the kind of change a journal records: a repair strategy, or the command that
// planned it (offsets-reset, rewind, purge …).
type Strategy string

// The strategies the engine treats apart.
const (
	// StrategySparkProcedure is repair's manual procedure: its prediction is the restart once a
	// person has run it, so it is not checked against the changed files.
	StrategySparkProcedure Strategy = "spark-procedure"
	// StrategyPurge names `ckpt purge` (internal/purge): deletes of batches far below those the
	// restart reads, whose order does not matter, so object stores apply and undo them
	// several at a time (unordered).
	StrategyPurge Strategy = "purge"
)

// Plan is what Apply applies: the file changes, in order, and the planner's prediction for the
// checkpoint once they are applied.
type Plan struct {
	// Strategy is recorded in the journal.
	Strategy Strategy
	// Actions are the file changes, in the order Apply applies them.
	Actions []Action
	// After is the planner's prediction for the changed checkpoint, checked under the lock and
	// verified afterwards; nil when there is no restart to verify (a file sink's half).
	After *recovery.Result
	// Options are the planner options predicted with (Apply verifies with them).
	Options recovery.Options
}
