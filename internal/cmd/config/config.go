// Package config is `ckpt config`: the settings in effect and where each came from, and the
// contexts of the configuration file (get-contexts, use-context), as kubectl config does.
package config

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/cli"
	cfg "github.com/ckpt-dev/ckpt/internal/config"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/render"
)

// long is also the page of `ckpt help config`.
const long = `ckpt reads defaults from a YAML file of named contexts, as kubectl does, so that the broker,
its Kafka client options and the store endpoints are not typed on every call. The file is
$CKPT_CONFIG, else $XDG_CONFIG_HOME/ckpt/config.yaml, else ~/.config/ckpt/config.yaml; none is
needed.

  current-context: prod
  contexts:
    prod:
      bootstrap-server: kafka-1:9093,kafka-2:9093
      kafka-option-file: /etc/ckpt/prod-client.properties
      kafka-options:
        security.protocol: SASL_SSL
        sasl.mechanism: SCRAM-SHA-512
      broker-timeout: 45s
      s3-endpoint: https://minio.internal:9000
      s3-region: eu-west-1
      s3-path-style: true
      s3-timeout: 45s
      store-timeout: 45s
      webhdfs-endpoint: http://namenode:9870

Every key is optional; a misspelt one is an error. Precedence, highest first: the flag, the
environment variable (ckpt help environment), the context, the built-in default. The context is
--context, else CKPT_CONTEXT, else current-context. kafka-options apply only when no
--kafka-option is given; keep passwords in a kafka-option-file with restricted permissions.

  ckpt config                    the settings in effect and where each came from
  ckpt config get-contexts       the contexts, * marks the one in effect
  ckpt config use-context NAME   make NAME the current context`

// NewCmd builds `ckpt config` and its subcommands.
func NewCmd(env *cli.Env) *cobra.Command {
	var output string
	load := func(cmd *cobra.Command) (*cli.ConfigState, error) {
		ctxFlag, _ := cmd.Flags().GetString("context")
		getenv := env.Getenv
		if getenv == nil {
			getenv = func(string) string { return "" }
		}
		return cli.LoadConfig(getenv, ctxFlag)
	}
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the settings in effect and where each came from (flags > environment > context > default)",
		Long:  long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			st, err := load(cmd)
			if err != nil {
				return err
			}
			for i, e := range st.Settings {
				for j, v := range e.Values {
					if cli.Hidden(v) {
						k, _, _ := strings.Cut(v, "=")
						st.Settings[i].Values[j] = k + "=<hidden>"
					}
				}
			}
			if f == render.FormatJSON {
				return render.JSON(env.IO.Out, st)
			}
			r := render.New(env.IO)
			ctx := "none"
			if st.Context != "" {
				ctx = st.Context + " (from " + st.ContextFrom + ")"
			}
			r.KV([][2]string{{"Config file", orNone(st.Path)}, {"Context", ctx}})
			rows := [][]string{}
			for _, e := range st.Settings {
				v := strings.Join(e.Values, ", ")
				if v == "" {
					v = "-"
				}
				rows = append(rows, []string{"--" + e.Flag, v, e.Source})
			}
			r.Println()
			r.Table(render.Table{Headers: []string{"flag", "value", "source"}, Rows: rows})
			return nil
		},
	}
	cli.AddOutputFlag(cmd, &output)
	cmd.AddCommand(&cobra.Command{
		Use:   "get-contexts",
		Short: "List the contexts of the configuration file (* marks the one in effect)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := load(cmd)
			if err != nil {
				return err
			}
			r := render.New(env.IO)
			rows := [][]string{}
			for _, n := range st.File.Names() {
				cur := ""
				if n == st.Context {
					cur = "*"
				}
				c := st.File.Contexts[n]
				bs := "-"
				if c != nil && c.BootstrapServer != "" {
					bs = c.BootstrapServer
				}
				rows = append(rows, []string{cur, n, bs})
			}
			if len(rows) == 0 {
				r.Printf("no contexts in %s (see ckpt help config)\n", orNone(st.Path))
				return nil
			}
			r.Table(render.Table{Headers: []string{"current", "name", "bootstrap-server"}, Rows: rows})
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "use-context NAME",
		Short: "Make NAME the current context of the configuration file",
		Args:  cli.ExactArgs(1, "a context name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			getenv := env.Getenv
			if getenv == nil {
				getenv = func(string) string { return "" }
			}
			path := cfg.Path(getenv)
			f, err := cfg.Load(path)
			if err != nil {
				return exitcode.UsageError(err)
			}
			if _, ok := f.Contexts[args[0]]; !ok {
				return exitcode.UsageError(fmt.Errorf("no context %q in %s: contexts are %s", args[0], orNone(path), orNone(strings.Join(f.Names(), ", "))))
			}
			if err := cfg.SetCurrent(path, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(env.IO.Out, "Switched to context %q.\n", args[0])
			return nil
		},
	})
	return cmd
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
