// Package repair fixes the checkpoint problems doctor finds without ever losing a byte: it computes
// a plan, shows what the plan will cost, and applies it only on request, with a backup and a
// journal that can undo or finish it.
//
// The work is split the way restic and etcd split theirs:
//
//   - NewPlan is a pure function of the checkpoint: it turns doctor's findings into candidate
//     actions (delete a file, write a copy of one), applies them to an in-memory overlay
//     (checkpoint.Overlay) and runs recovery.Plan on the result. Every strategy's consequence is
//     the planner's answer for the overlay, never a rule re-derived here.
//   - Execute applies a Plan: it takes the repair lock, writes the journal, copies every file it
//     will touch to the backup location, then applies the actions one by one, writing the journal
//     durably before each change. Finally it reloads the checkpoint, runs the planner again and
//     records the verified outcome.
//   - Undo and Resume read a journal and bring the checkpoint back to exactly the bytes it had, or
//     finish the repair. Both decide what is left to do by hashing the files as they are now, so
//     they are safe to run again after any crash, including their own.
//
// Every path is checked before it is touched (Confine): repair changes only direct children of
// offsets/ and commits/, never follows a symbolic link, and never writes outside its own _ckpt/
// directory otherwise.
package repair
