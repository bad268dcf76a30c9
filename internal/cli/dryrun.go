package cli

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/ckpt-dev/ckpt/internal/exitcode"
)

// AddDryRunFlag adds --dry-run, the explicit spelling of what a mutating command does without
// --execute: print the plan, change nothing. Scripts can say it for clarity.
func AddDryRunFlag(fl *pflag.FlagSet, p *bool) {
	fl.BoolVar(p, "dry-run", false, "print the plan and change nothing (the default; the explicit form)")
}

// CheckDryRun refuses --dry-run together with the flag that applies (--execute, or --yes for
// commands that apply after a question).
func CheckDryRun(dryRun bool, apply bool, applyFlag string) error {
	if dryRun && apply {
		return exitcode.UsageError(errors.New("--dry-run and " + applyFlag + " contradict each other: --dry-run prints the plan and changes nothing, " + applyFlag + " applies it"))
	}
	return nil
}
