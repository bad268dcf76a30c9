package cli

import (
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ckpt-dev/ckpt/internal/config"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
)

// Effective is one setting as a command gets it, and where it came from.
type Effective struct {
	Flag   string   `json:"flag"`
	Values []string `json:"values"`
	// Source is "env CKPT_…", "context NAME" or "default".
	Source string `json:"source"`
}

// ConfigState is what the configuration file and the environment give: the file, the context in
// effect, and each setting.
type ConfigState struct {
	Path    string `json:"path"`
	Context string `json:"context"`
	// ContextFrom says what chose the context (--context, CKPT_CONTEXT, current-context).
	ContextFrom string       `json:"contextFrom,omitempty"`
	Settings    []Effective  `json:"settings"`
	File        *config.File `json:"-"`
	ctx         *config.Context
}

// envInCkpt are the variables ckpt reads here; the others of config.Settings (AWS_*, the store
// timeouts, WebHDFS) are read by the storage layer itself, and win over a context there too.
var envInCkpt = map[string]bool{"CKPT_BOOTSTRAP_SERVERS": true, "CKPT_KAFKA_OPTION_FILE": true, "CKPT_BROKER_TIMEOUT": true}

// LoadConfig reads the configuration file and selects the context (contextFlag is --context).
func LoadConfig(getenv func(string) string, contextFlag string) (*ConfigState, error) {
	path := config.Path(getenv)
	f, err := config.Load(path)
	if err != nil {
		return nil, exitcode.UsageError(err)
	}
	name, c, from, err := f.Selected(contextFlag, getenv)
	if err != nil {
		return nil, exitcode.UsageError(err)
	}
	st := &ConfigState{Path: path, Context: name, ContextFrom: from, File: f, ctx: c}
	vals := c.Values()
	for _, s := range config.Settings {
		e := Effective{Flag: s.Flag, Source: "default"}
		switch {
		case s.Env != "" && getenv(s.Env) != "":
			e.Values, e.Source = []string{getenv(s.Env)}, "env "+s.Env
		case len(vals[s.Flag]) > 0:
			e.Values, e.Source = vals[s.Flag], "context "+name
		}
		st.Settings = append(st.Settings, e)
	}
	return st, nil
}

// ApplyConfig gives the flags of cmd that were not set on the command line their value from the
// environment or the context: flag > environment > context > default. Values are set without
// marking the flags as changed, so a command sees them as it sees a default.
func ApplyConfig(cmd *cobra.Command, st *ConfigState) error {
	for _, e := range st.Settings {
		f := cmd.Flags().Lookup(e.Flag)
		if f == nil || f.Changed || e.Source == "default" {
			continue
		}
		if strings.HasPrefix(e.Source, "env ") && !envInCkpt[strings.TrimPrefix(e.Source, "env ")] {
			continue // read by the storage layer itself
		}
		if err := setDefault(f, e.Values); err != nil {
			return exitcode.UsageError(err)
		}
	}
	return nil
}

func setDefault(f *pflag.Flag, values []string) error {
	for _, v := range values {
		if err := f.Value.Set(v); err != nil {
			return &flagError{flag: f.Name, value: v, err: err}
		}
	}
	return nil
}

type flagError struct {
	flag, value string
	err         error
}

func (e *flagError) Error() string {
	return "config: " + e.flag + " " + quote(e.value) + ": " + e.err.Error()
}

// Hidden reports whether a Kafka option's value is a secret, not printed by `ckpt config`.
func Hidden(kv string) bool {
	k, _, _ := strings.Cut(strings.ToLower(kv), "=")
	for _, w := range []string{"password", "jaas", "secret", "token"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

func quote(s string) string {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return strconv.Quote(s)
		}
	}
	return s
}

// SortedContexts are the context names of the file.
func (st *ConfigState) SortedContexts() []string {
	n := st.File.Names()
	sort.Strings(n)
	return n
}

// BrokerGiven reports whether the broker was given on the command line (--bootstrap-server,
// --kafka-option or --kafka-option-file), not by the environment or a context: a default from
// the config must not make a command that does not use a broker (inspect --batches, doctor
// --recursive) a usage error.
func BrokerGiven(fs *pflag.FlagSet) bool {
	return fs.Changed("bootstrap-server") || fs.Changed("kafka-option") || fs.Changed("kafka-option-file")
}
