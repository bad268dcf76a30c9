package cli

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/topicstate"
)

func TestFlagsParse(t *testing.T) {
	dir := t.TempDir()
	props := filepath.Join(dir, "client.properties")
	if err := os.WriteFile(props, []byte(`# a Kafka client.properties file
security.protocol=SASL_SSL
sasl.mechanism: SCRAM-SHA-512
! another comment
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="u" password="p w";
kafka.client.id = from-file
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var f BrokerFlags
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	f.AddFlags(fs)
	if f.Timeout != topicstate.DefaultTimeout {
		t.Fatalf("default timeout %v", f.Timeout)
	}
	if err := fs.Parse([]string{"--bootstrap-server", "h1:9092,h2:9092", "--kafka-option-file", props,
		"--kafka-option", "kafka.client.id=ckpt", "--kafka-option", "ssl.endpoint.identification.algorithm=", "--broker-timeout", "3s"}); err != nil {
		t.Fatal(err)
	}
	if !f.Enabled() || f.Timeout != 3*time.Second {
		t.Fatalf("flags %+v", f)
	}
	m, err := f.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"kafka.bootstrap.servers":                     "h1:9092,h2:9092",
		"kafka.security.protocol":                     "SASL_SSL",
		"kafka.sasl.mechanism":                        "SCRAM-SHA-512",
		"kafka.sasl.jaas.config":                      `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p w";`,
		"kafka.client.id":                             "ckpt", // the flag wins over the file
		"kafka.ssl.endpoint.identification.algorithm": "",
	}
	if len(m) != len(want) {
		t.Fatalf("options %q", m)
	}
	for k, v := range want {
		if m[k] != v {
			t.Fatalf("%s = %q, want %q", k, m[k], v)
		}
	}
}

func TestFlagsErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		f    BrokerFlags
		want string
	}{
		{BrokerFlags{}, "no Kafka broker: give --bootstrap-server"},
		{BrokerFlags{BootstrapServers: "h:1", Options: []string{"novalue"}}, `--kafka-option "novalue": want key=value`},
		{BrokerFlags{BootstrapServers: "h:1", Options: []string{"kafka.bootstrap.servers=other:1"}}, "disagree"},
		{BrokerFlags{BootstrapServers: "h:1", Options: []string{"kafka.sasl.mechanism=GSSAPI"}}, "needs kafka.security.protocol SASL_PLAINTEXT or SASL_SSL"},
		{BrokerFlags{BootstrapServers: "h:1", Options: []string{"kafka.security.protocol=SASL_PLAINTEXT", "kafka.sasl.mechanism=GSSAPI", "kafka.sasl.jaas.config=x required;"}}, `"GSSAPI" is not supported`},
		{BrokerFlags{BootstrapServers: "h:1", Options: []string{"kafka.no.such=1"}}, "unknown Kafka client option 'kafka.no.such'"},
		{BrokerFlags{BootstrapServers: "h:1", OptionsFile: "/nonexistent/file"}, "--kafka-option-file"},
	} {
		_, err := tc.f.KgoClient(ctx)
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%+v: error %v (exit %d), want usage error containing %q", tc.f, err, exitcode.Code(err), tc.want)
		}
	}
	if (&BrokerFlags{}).Enabled() || !(&BrokerFlags{Options: []string{"bootstrap.servers=h:1"}}).Enabled() {
		t.Fatal("Enabled")
	}
}

// An unreachable broker fails within the timeout, with a message naming it.
func TestFlagsUnreachable(t *testing.T) {
	f := &BrokerFlags{BootstrapServers: "127.0.0.1:1", Timeout: 500 * time.Millisecond}
	start := time.Now()
	_, err := f.Client(context.Background())
	if err == nil || !strings.Contains(err.Error(), "kafka 127.0.0.1:1: the broker refused the connection") {
		t.Fatalf("error %v", err)
	}
	// A hang guard, not a speed target: without the deadline the client retries for ever.
	if d := time.Since(start); d > 60*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestParseProperties(t *testing.T) {
	m, err := parseProperties([]byte("a=1\n  b : 2\nc 3\n\n# x\nd=\ne=x=y\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"a": "1", "b": "2", "c": "3", "d": "", "e": "x=y"} {
		if m[k] != v {
			t.Fatalf("%s = %q, want %q (all %q)", k, m[k], v, m)
		}
	}
	if _, err := parseProperties([]byte("a=1\nb=\\")); err == nil {
		t.Fatal("dangling continuation accepted")
	}
}

// A refused connection is said as such at once, not as a wait of --broker-timeout ("cannot
// reach the broker within 30s" was printed after 58 ms).
func TestKgoClientRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: the dial is refused
	f := &BrokerFlags{BootstrapServers: addr, Timeout: 30 * time.Second}
	_, err = f.KgoClient(context.Background())
	if err == nil || !strings.Contains(err.Error(), "refused the connection") || strings.Contains(err.Error(), "within 30s") {
		t.Fatalf("error %v", err)
	}
}
