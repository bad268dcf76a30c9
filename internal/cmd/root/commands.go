package root

import (
	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/cmd/broker"
	configcmd "github.com/ckpt-dev/ckpt/internal/cmd/config"
	"github.com/ckpt-dev/ckpt/internal/cmd/cp"
	"github.com/ckpt-dev/ckpt/internal/cmd/doctor"
	"github.com/ckpt-dev/ckpt/internal/cmd/inspect"
	"github.com/ckpt-dev/ckpt/internal/cmd/lag"
	migratecmd "github.com/ckpt-dev/ckpt/internal/cmd/migrate"
	"github.com/ckpt-dev/ckpt/internal/cmd/offsets"
	"github.com/ckpt-dev/ckpt/internal/cmd/purge"
	"github.com/ckpt-dev/ckpt/internal/cmd/repair"
	"github.com/ckpt-dev/ckpt/internal/cmd/replay"
	"github.com/ckpt-dev/ckpt/internal/cmd/rewind"
	"github.com/ckpt-dev/ckpt/internal/cmd/run"
	"github.com/ckpt-dev/ckpt/internal/cmd/sink"
	statecmd "github.com/ckpt-dev/ckpt/internal/cmd/state"
	"github.com/ckpt-dev/ckpt/internal/cmd/version"
)

// commands lists every subcommand, in the order help shows them.
func commands(env *cli.Env) []*cobra.Command {
	return []*cobra.Command{
		inspect.NewCmd(env, nil),
		doctor.NewCmd(env, nil),
		replay.NewCmd(env, nil),
		lag.NewCmd(env, nil),
		repair.NewCmd(env, nil),
		offsets.NewCmd(env, nil),
		rewind.NewCmd(env, nil),
		purge.NewCmd(env, nil),
		sink.NewCmd(env, nil),
		cp.NewCmd(env, nil),
		statecmd.NewCmd(env, nil),
		migratecmd.NewCmd(env, nil),
		run.NewCmd(env, nil),
		broker.NewCmd(env),
		version.NewCmd(env),
		configcmd.NewCmd(env),
	}
}
