package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/flagfile"
	"github.com/ckpt-dev/ckpt/internal/kafka"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/topicstate"
)

// BrokerFlags are the broker-access flags shared by inspect, doctor, replay, repair and lag. Add them
// with AddFlags; a command without --bootstrap-server works without a broker (Enabled is false).
type BrokerFlags struct {
	// BootstrapServers is --bootstrap-server host:port[,host:port…]. Default: "" (no broker).
	BootstrapServers string
	// Options are --kafka-option key=value: Spark's kafka.* client options
	// (kafka.security.protocol, kafka.sasl.mechanism, kafka.sasl.jaas.config,
	// kafka.ssl.ca.location, …; see docs/kafka.md). The "kafka." prefix may be left out.
	// Default: none (PLAINTEXT).
	Options []string
	// OptionsFile is --kafka-option-file: a Java properties file of the same options, so that
	// passwords stay off the command line (and out of ps). Keys may omit "kafka.", as in a
	// Kafka client.properties file. --kafka-option wins over the file. Default: "".
	OptionsFile string
	// Timeout is --broker-timeout: how long one broker operation (a refresh of lag, doctor's
	// read) may take before ckpt gives up. Default: topicstate.DefaultTimeout (30s).
	Timeout time.Duration
}

// AddFlags registers --bootstrap-server, --kafka-option, --kafka-option-file and
// --broker-timeout on fs.
func (f *BrokerFlags) AddFlags(fs *pflag.FlagSet) {
	if f.Timeout == 0 {
		f.Timeout = topicstate.DefaultTimeout
	}
	fs.StringVar(&f.BootstrapServers, "bootstrap-server", f.BootstrapServers, "Kafka `host:port[,host:port…]` to compare the checkpoint with (read only)")
	fs.StringArrayVar(&f.Options, "kafka-option", f.Options, "Kafka client option `kafka.key=value`, as given to Spark: kafka.security.protocol, kafka.sasl.mechanism, kafka.sasl.jaas.config, kafka.ssl.ca.location, … (repeatable)")
	fs.StringVar(&f.OptionsFile, "kafka-option-file", f.OptionsFile, "Java properties `file` of Kafka client options (keys with or without \"kafka.\"); keeps secrets off the command line")
	fs.DurationVar(&f.Timeout, "broker-timeout", f.Timeout, "give up on a broker operation after this long")
}

// Enabled reports whether a broker was given (--bootstrap-server, or kafka.bootstrap.servers
// in the options).
func (f *BrokerFlags) Enabled() bool {
	if strings.TrimSpace(f.BootstrapServers) != "" {
		return true
	}
	m, err := f.ClientOptions()
	return err == nil && strings.TrimSpace(m["kafka.bootstrap.servers"]) != ""
}

// ClientOptions merges the flags into the kafka.* map kafka.ClientOpts takes: the file, then
// --kafka-option, then --bootstrap-server. Malformed entries are usage errors.
func (f *BrokerFlags) ClientOptions() (map[string]string, error) {
	m := map[string]string{}
	if f.OptionsFile != "" {
		data, err := flagfile.Read("--kafka-option-file", f.OptionsFile)
		if err != nil {
			return nil, exitcode.UsageError(fmt.Errorf("--kafka-option-file: %w", err))
		}
		props, err := parseProperties(data)
		if err != nil {
			return nil, exitcode.UsageError(fmt.Errorf("--kafka-option-file %s: %w", f.OptionsFile, err))
		}
		for k, v := range props {
			m[kafkaKey(k)] = v
		}
	}
	for _, o := range f.Options {
		k, v, ok := strings.Cut(o, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, exitcode.UsageError(fmt.Errorf("--kafka-option %q: want key=value, e.g. kafka.security.protocol=SASL_SSL", o))
		}
		m[kafkaKey(k)] = v
	}
	if b := strings.TrimSpace(f.BootstrapServers); b != "" {
		if prev, ok := m["kafka.bootstrap.servers"]; ok && prev != b {
			return nil, exitcode.UsageError(fmt.Errorf("--bootstrap-server %q and kafka.bootstrap.servers=%q disagree: give one", b, prev))
		}
		m["kafka.bootstrap.servers"] = b
	}
	return m, nil
}

// kafkaKey lower-cases a key and adds the "kafka." prefix Spark's option names carry.
func kafkaKey(k string) string {
	k = strings.ToLower(strings.TrimSpace(k))
	if !strings.HasPrefix(k, "kafka.") {
		k = "kafka." + k
	}
	return k
}

// KgoClient returns a franz-go client for the broker, made with kafka.ClientOpts (the same
// connection settings as `ckpt run`), set up for the read helpers here: control records kept,
// offsets never reset, short fetch waits. It checks the connection (within Timeout) so that an
// unreachable broker or bad credentials fail here with a clear message. The caller closes it.
func (f *BrokerFlags) KgoClient(ctx context.Context) (*kgo.Client, error) {
	m, err := f.ClientOptions()
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(m["kafka.bootstrap.servers"]) == "" {
		return nil, exitcode.UsageError(errors.New("no Kafka broker: give --bootstrap-server host:port"))
	}
	opts, err := kafka.ClientOpts(m)
	if err != nil {
		var oe *kafka.OptionError
		if errors.As(err, &oe) {
			return nil, exitcode.UsageError(err)
		}
		return nil, err
	}
	opts = append(opts, topicstate.ClientOpts()...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka %s: %w", m["kafka.bootstrap.servers"], err)
	}
	pctx, cancel := context.WithTimeout(ctx, f.timeout())
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			// Refused at once: "within 30s" would say ckpt waited, which it did not.
			return nil, fmt.Errorf("kafka %s: the broker refused the connection (nothing listens there?): %w", m["kafka.bootstrap.servers"], err)
		}
		return nil, fmt.Errorf("kafka %s: cannot reach the broker within %s: %w", m["kafka.bootstrap.servers"], f.timeout(), err)
	}
	return cl, nil
}

// Client is KgoClient wrapped in an admin client, what Read needs. Closing it closes the
// underlying client.
func (f *BrokerFlags) Client(ctx context.Context) (*kadm.Client, error) {
	cl, err := f.KgoClient(ctx)
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// Context bounds one broker operation by Timeout.
func (f *BrokerFlags) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.timeout())
}

func (f *BrokerFlags) timeout() time.Duration {
	if f.Timeout <= 0 {
		return topicstate.DefaultTimeout
	}
	return f.Timeout
}

// parseProperties reads the subset of java.util.Properties that client config files use:
// "key=value" or "key: value" or "key value" lines, '#' and '!' comments, a trailing backslash
// continuing a line, and \\ escapes left as they are (ckpt does not need them).
func parseProperties(data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var logical strings.Builder
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if logical.Len() == 0 && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if strings.HasSuffix(line, `\`) && !strings.HasSuffix(line, `\\`) {
			logical.WriteString(strings.TrimSuffix(line, `\`))
			continue
		}
		logical.WriteString(line)
		entry := logical.String()
		logical.Reset()
		i := strings.IndexAny(entry, "=: \t")
		if i <= 0 {
			return nil, fmt.Errorf("line %d: want key=value", n)
		}
		k, v := entry[:i], strings.TrimLeft(entry[i:], " \t")
		if v != "" && (v[0] == '=' || v[0] == ':') {
			v = strings.TrimLeft(v[1:], " \t")
		}
		out[k] = strings.TrimRight(v, " \t\r")
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if logical.Len() > 0 {
		return nil, fmt.Errorf("line %d: the last line ends with a continuation backslash", n)
	}
	return out, nil
}

// ReadTopics connects with the flags, reads the topics' offsets (Read) within Timeout and
// closes the connection: what doctor, inspect and repair need from the broker.
func (f *BrokerFlags) ReadTopics(ctx context.Context, topics []string) (*recovery.BrokerState, error) {
	adm, err := f.Client(ctx)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	rctx, cancel := f.Context(ctx)
	defer cancel()
	return topicstate.Read(rctx, adm, topics)
}

// ReadCheckpoint reads the broker's offsets of every topic a restart of cp can read
// (recovery.CheckpointTopics: the strategies of a repair and the positions of a reset restart
// from different batches): the one way the commands read the broker for a checkpoint. With adm
// nil it connects and closes its own client; replay passes the client it keeps for counting.
func (f *BrokerFlags) ReadCheckpoint(ctx context.Context, adm *kadm.Client, cp *checkpoint.Checkpoint) (*recovery.BrokerState, error) {
	topics, err := recovery.CheckpointTopics(ctx, cp)
	if err != nil {
		return nil, err
	}
	if adm == nil {
		return f.ReadTopics(ctx, topics)
	}
	rctx, cancel := f.Context(ctx)
	defer cancel()
	return topicstate.Read(rctx, adm, topics)
}

// CommandArgs are the broker flags to repeat in a ckpt command printed for the user:
// --bootstrap-server and --kafka-option-file. --kafka-option values are left out (they may hold
// passwords); a command that needs them says so.
func (f *BrokerFlags) CommandArgs() []string {
	var out []string
	if b := strings.TrimSpace(f.BootstrapServers); b != "" {
		out = append(out, "--bootstrap-server", b)
	}
	if f.OptionsFile != "" {
		out = append(out, "--kafka-option-file", f.OptionsFile)
	}
	return out
}
