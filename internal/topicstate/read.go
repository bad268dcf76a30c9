package topicstate

import (
	"context"
	"strings"
)

// ReadTopics connects with the flags, reads the topics' offsets (Read) within Timeout and
// closes the connection: what doctor, inspect and repair need from the broker.
func (f *Flags) ReadTopics(ctx context.Context, topics []string) (*State, error) {
	adm, err := f.Client(ctx)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	rctx, cancel := f.Context(ctx)
	defer cancel()
	return Read(rctx, adm, topics)
}

// CommandArgs are the broker flags to repeat in a ckpt command printed for the user:
// --bootstrap-server and --kafka-option-file. --kafka-option values are left out (they may hold
// passwords); a command that needs them says so.
func (f *Flags) CommandArgs() []string {
	var out []string
	if b := strings.TrimSpace(f.BootstrapServers); b != "" {
		out = append(out, "--bootstrap-server", b)
	}
	if f.OptionsFile != "" {
		out = append(out, "--kafka-option-file", f.OptionsFile)
	}
	return out
}
