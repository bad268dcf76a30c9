package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// RestartFlags describe the restart the planner predicts: the engine, the Spark release and the
// commit format. doctor, replay and repair share them so that the three commands agree on the
// names, the defaults and what is a usage error.
type RestartFlags struct {
	mode                string
	sparkVersion        string
	commitFormatVersion int
}

// AddFlags registers --mode, --spark-version and --commit-format-version with completions.
func (f *RestartFlags) AddFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.mode, "mode", "", "engine of the restart: sync, async (async progress tracking) or spark-2.1 (default sync; spark-2.1 with --spark-version 2.1)")
	fl.StringVar(&f.sparkVersion, "spark-version", "", "Spark release of the restart: "+strings.Join(recovery.SparkVersions, ", ")+" (default "+recovery.DefaultSparkVersion+")")
	fl.IntVar(&f.commitFormatVersion, "commit-format-version", 0, "spark.sql.streaming.stateStore.checkpointFormatVersion, which Spark 4.0 requires commit files to match (default 1)")
	_ = cmd.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions([]string{string(recovery.ModeSync), string(recovery.ModeAsync), string(recovery.ModeSpark21)}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("spark-version", cobra.FixedCompletions(recovery.SparkVersions, cobra.ShellCompDirectiveNoFileComp))
}

// Options validates the flags and returns them as planner options. An unset --mode stays ""
// so that the planner picks the engine of the release (spark-2.1 for 2.1, sync otherwise).
func (f *RestartFlags) Options() (recovery.Options, error) {
	var o recovery.Options
	if f.mode != "" {
		m, err := recovery.ParseMode(f.mode)
		if err != nil {
			return o, exitcode.UsageError(fmt.Errorf("--mode: %w", err))
		}
		o.Mode = m
	}
	if f.sparkVersion != "" {
		if err := recovery.ValidateSparkVersion(f.sparkVersion); err != nil {
			return o, exitcode.UsageError(fmt.Errorf("--spark-version: %w", err))
		}
		o.SparkVersion = f.sparkVersion
	}
	if c := f.commitFormatVersion; c < 0 || c > 3 {
		return o, exitcode.UsageError(fmt.Errorf("--commit-format-version %d: want 1, 2 or 3", c))
	}
	o.CommitFormatVersion = f.commitFormatVersion
	return o, nil
}
