// Package repair fixes the checkpoint problems doctor finds without ever losing a byte: it computes
// a plan, shows what the plan will cost, and leaves applying it to the journal engine
// (internal/journal), with a backup and a journal that can undo or finish it.
//
// NewPlan is a pure function of the checkpoint: it turns doctor's findings into candidate actions
// (delete a file, write a copy of one), applies them to an in-memory overlay (checkpoint.Overlay)
// and runs recovery.Plan on the result. Every strategy's consequence is the planner's answer for
// the overlay, never a rule re-derived here.
package repair
