package cli

import (
	"github.com/spf13/pflag"
)

// AddAllowEmptyFlag adds --allow-empty: every command that reads a checkpoint refuses a location
// that holds none (checkpoint.Require), unless told that an empty directory is expected.
func AddAllowEmptyFlag(fl *pflag.FlagSet, p *bool) {
	fl.BoolVar(p, "allow-empty", false, "treat an empty or unrelated directory as a checkpoint that has not started, instead of failing (a missing path still fails)")
}
