// Package position moves a query's position in its checkpoint: it exports where a checkpoint
// stands as Spark's startingOffsets (Export), plans a reset of Kafka offsets to a new position
// (PlanReset), and plans a rewind to an earlier batch (PlanRewind).
//
// Nothing here writes: a plan is a list of journal.Actions with the recovery planner's prediction
// for the checkpoint they leave (computed on an in-memory overlay), and `ckpt offsets reset` and
// `ckpt rewind` apply it with journal.Apply, so every change is backed up, journaled, verified by
// recovery.Plan and undone by `ckpt repair undo`, like a repair.
package position
