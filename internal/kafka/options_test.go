package kafka

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

func TestParseSourceOptionsErrors(t *testing.T) {
	bs := "kafka.bootstrap.servers"
	tests := []struct {
		name   string
		opts   map[string]string
		option string
		want   string // exact message
	}{
		{"no strategy", map[string]string{bs: "x:1"}, "",
			"One of the following options must be specified for Kafka source: subscribe, subscribepattern, assign. See the docs for more details."},
		{"two strategies", map[string]string{bs: "x:1", "subscribe": "a", "assign": `{"a":[0]}`}, "",
			"Only one of the following options can be specified for Kafka source: subscribe, subscribepattern, assign. See the docs for more details."},
		{"three strategies, any case", map[string]string{bs: "x:1", "SUBSCRIBE": "a", "subscribePattern": "a.*", "Assign": `{"a":[0]}`}, "",
			"Only one of the following options can be specified for Kafka source: subscribe, subscribepattern, assign. See the docs for more details."},
		{"empty subscribe", map[string]string{bs: "x:1", "subscribe": " , "}, "subscribe",
			"No topics to subscribe to as specified value for option 'subscribe' is ' , '"},
		{"empty pattern", map[string]string{bs: "x:1", "subscribePattern": "  "}, "subscribePattern",
			"Pattern to subscribe is empty as specified value for option 'subscribePattern' is '  '"},
		{"assign not json object", map[string]string{bs: "x:1", "assign": "a:0"}, "assign",
			"No topicpartitions to assign as specified value for option 'assign' is 'a:0'"},
		{"assign bad json", map[string]string{bs: "x:1", "assign": `{"a":0}`}, "assign",
			`Expected e.g. {"topicA":[0,1],"topicB":[0,1]}, got {"a":0}`},
		{"missing bootstrap", map[string]string{"subscribe": "a"}, "kafka.bootstrap.servers",
			"Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"},
		{"ending offsets", map[string]string{bs: "x:1", "subscribe": "a", "endingOffsets": "latest"}, "endingOffsets",
			"ending offset not valid in streaming queries"},
		{"min above max", map[string]string{bs: "x:1", "subscribe": "a", "minOffsetsPerTrigger": "20", "maxOffsetsPerTrigger": "10"}, "minOffsetsPerTrigger",
			"The value of minOffsetPerTrigger(20) is higher than the maxOffsetsPerTrigger(10)."},
		{"key deserializer", map[string]string{bs: "x:1", "subscribe": "a", "kafka.key.deserializer": "x"}, "kafka.key.deserializer",
			"Kafka option 'key.deserializer' is not supported as keys are deserialized as byte arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the keys."},
		{"enable auto commit", map[string]string{bs: "x:1", "subscribe": "a", "kafka.enable.auto.commit": "true"}, "kafka.enable.auto.commit",
			"Kafka option 'enable.auto.commit' is not supported"},
		{"bad json offsets", map[string]string{bs: "x:1", "subscribe": "a", "startingOffsets": "{nope"}, "startingOffsets",
			`Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got {nope`},
		{"bad bool", map[string]string{bs: "x:1", "subscribe": "a", "failOnDataLoss": "yes"}, "failOnDataLoss",
			`invalid value for option 'failOnDataLoss': For input string: "yes" (accepted values: true, false)`},
		{"bad long", map[string]string{bs: "x:1", "subscribe": "a", "maxOffsetsPerTrigger": "1e3"}, "maxOffsetsPerTrigger",
			`invalid value for option 'maxOffsetsPerTrigger': For input string: "1e3" (expected a positive integer)`},
		{"bad duration", map[string]string{bs: "x:1", "subscribe": "a", "maxTriggerDelay": "5 parsecs"}, "maxTriggerDelay",
			"Time must be specified as seconds (s), milliseconds (ms), microseconds (us), minutes (m or min), hour (h), or day (d). E.g. 50s, 100ms, or 250us.\nFailed to parse time string: 5 parsecs"},
		{"bad duration unit", map[string]string{bs: "x:1", "subscribe": "a", "maxTriggerDelay": "5w"}, "maxTriggerDelay",
			"Time must be specified as seconds (s), milliseconds (ms), microseconds (us), minutes (m or min), hour (h), or day (d). E.g. 50s, 100ms, or 250us.\nInvalid suffix: \"w\""},
		{"spark-only option", map[string]string{bs: "x:1", "subscribe": "a", "minPartitions": "4"}, "minPartitions",
			"option 'minPartitions' is supported by Spark but not by ckpt yet"},
		{"bad protocol", map[string]string{bs: "x:1", "subscribe": "a", "kafka.security.protocol": "TLS"}, "kafka.security.protocol",
			`invalid value "TLS" for Kafka option 'security.protocol': accepted values are PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL`},
		{"gssapi default", map[string]string{bs: "x:1", "subscribe": "a", "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.jaas.config": `x required username="u" password="p";`}, "kafka.sasl.mechanism",
			`Kafka SASL mechanism "GSSAPI" is not supported by ckpt (set kafka.sasl.mechanism): accepted values are PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`},
		{"sasl without protocol", map[string]string{bs: "x:1", "subscribe": "a", "kafka.sasl.mechanism": "PLAIN"}, "kafka.sasl.mechanism",
			"Kafka option 'sasl.mechanism' needs kafka.security.protocol SASL_PLAINTEXT or SASL_SSL (it is PLAINTEXT)"},
		{"bad isolation", map[string]string{bs: "x:1", "subscribe": "a", "kafka.isolation.level": "serializable"}, "kafka.isolation.level",
			`invalid value "serializable" for Kafka option 'isolation.level': accepted values are read_uncommitted, read_committed`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSourceOptions(tc.opts)
			var oe *OptionError
			if !errors.As(err, &oe) {
				t.Fatalf("err = %v (%T), want *OptionError", err, err)
			}
			if oe.Message != tc.want {
				t.Errorf("message\n got: %q\nwant: %q", oe.Message, tc.want)
			}
			if oe.Option != tc.option {
				t.Errorf("option = %q, want %q", oe.Option, tc.option)
			}
		})
	}
}

func TestParseSourceOptionsUnknownAndRefused(t *testing.T) {
	base := func(extra map[string]string) map[string]string {
		m := map[string]string{"kafka.bootstrap.servers": "x:1", "subscribe": "a"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	_, err := ParseSourceOptions(base(map[string]string{"startingOffset": "earliest"}))
	var oe *OptionError
	if !errors.As(err, &oe) || oe.Option != "startingOffset" || !strings.Contains(oe.Message, "unknown Kafka source option 'startingOffset'") || !strings.Contains(oe.Message, "startingOffsets") {
		t.Fatalf("unknown option: %v", err)
	}
	_, err = ParseSourceOptions(base(map[string]string{"kafka.fetch.min.bytes": "1"}))
	if !errors.As(err, &oe) || oe.Option != "kafka.fetch.min.bytes" || !strings.Contains(oe.Message, "kafka.ssl.ca.location") {
		t.Fatalf("unknown kafka option: %v", err)
	}
	_, err = ParseSourceOptions(base(map[string]string{"kafka.ssl.truststore.location": "/x.jks", "kafka.security.protocol": "SSL"}))
	if !errors.As(err, &oe) || !strings.Contains(oe.Message, "convert the stores to PEM") {
		t.Fatalf("jks: %v", err)
	}
	_, err = ParseSourceOptions(base(map[string]string{"kafka.auto.offset.reset": "earliest"}))
	if !errors.As(err, &oe) || !strings.HasPrefix(oe.Message, "\nKafka option 'auto.offset.reset' is not supported.\nInstead set the source option 'startingoffsets' to 'earliest' or 'latest'\n") {
		t.Fatalf("auto.offset.reset: %q", err)
	}
}

func TestParseSourceOptionsDefaultsAndValues(t *testing.T) {
	o, err := ParseSourceOptions(map[string]string{"kafka.bootstrap.servers": " a:1, b:2 ", "subscribe": "x, y,,"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.BootstrapServers, "|") != "a:1|b:2" || strings.Join(o.Subscribe, "|") != "x|y" {
		t.Errorf("servers %v topics %v", o.BootstrapServers, o.Subscribe)
	}
	if o.StartingOffsets.Kind != StartLatest || !o.FailOnDataLoss || o.IncludeHeaders || o.MaxTriggerDelay != 15*time.Minute ||
		o.MaxOffsetsPerTrigger != 0 || o.MinOffsetsPerTrigger != 0 || o.FetchOffsetNumRetries != 3 || o.FetchOffsetRetryInterval != time.Second ||
		o.PollTimeout != 120*time.Second || o.ReadCommitted {
		t.Errorf("defaults: %+v", o)
	}
	if rl := o.DefaultReadLimit(); rl != (ReadLimit{AllAvailable: true}) {
		t.Errorf("default read limit %+v", rl)
	}

	o, err = ParseSourceOptions(map[string]string{
		"kafka.bootstrap.servers": "a:1", "ASSIGN": `{"t":[1,0,1],"u":[3]}`, "startingoffsets": "EARLIEST",
		"failOnDataLoss": "FALSE", "includeHeaders": "True", "maxTriggerDelay": "30s", "minOffsetsPerTrigger": "5",
		"maxOffsetsPerTrigger": "10", "kafka.group.id": "g", "kafka.isolation.level": "read_committed",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []logformat.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "u", Partition: 3}}
	if len(o.Assign) != 3 || o.Assign[0] != want[0] || o.Assign[1] != want[1] || o.Assign[2] != want[2] {
		t.Errorf("assign %v", o.Assign)
	}
	if o.StartingOffsets.Kind != StartEarliest || o.FailOnDataLoss || !o.IncludeHeaders || o.MaxTriggerDelay != 30*time.Second ||
		o.GroupID != "g" || len(o.Notes) == 0 || !o.ReadCommitted {
		t.Errorf("values: %+v", o)
	}
	if rl := o.DefaultReadLimit(); rl != (ReadLimit{MaxRows: 10, MinRows: 5, MaxTriggerDelay: 30 * time.Second}) {
		t.Errorf("read limit %+v", rl)
	}

	o, err = ParseSourceOptions(map[string]string{"kafka.bootstrap.servers": "a:1", "subscribePattern": "in-.*", "startingOffsets": `{"t":{"0":-2,"1":-1,"2":42}}`})
	if err != nil {
		t.Fatal(err)
	}
	if o.StartingOffsets.Kind != StartSpecific || len(o.StartingOffsets.Specific) != 3 || o.StartingOffsets.Specific[logformat.TopicPartition{Topic: "t", Partition: 2}] != 42 {
		t.Errorf("specific %+v", o.StartingOffsets)
	}
	if !o.SubscribePattern.MatchString("xin-1") {
		t.Error("pattern must match anywhere, like Scala's findFirstIn")
	}
}

func TestParseSparkDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"15m": 15 * time.Minute, "30s": 30 * time.Second, "100": 100 * time.Millisecond, "2min": 2 * time.Minute,
		" 1H ": time.Hour, "1d": 24 * time.Hour, "1500us": time.Millisecond, "-5s": -5 * time.Second, "250ms": 250 * time.Millisecond,
	} {
		got, err := parseSparkDuration(in)
		if err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
}

func TestParseJAAS(t *testing.T) {
	got, err := parseJAAS(`org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="p\"w d";`)
	if err != nil || got["username"] != "alice" || got["password"] != `p"w d` {
		t.Fatalf("%v %v", got, err)
	}
	got, err = parseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule   REQUIRED
	  username=bob   password="x";`)
	if err != nil || got["username"] != "bob" || got["password"] != "x" {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", "Module", `Module maybe username="x";`, `Module required username="x`, `Module required =x`} {
		if _, err := parseJAAS(bad); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
}

func TestClientOpts(t *testing.T) {
	if _, err := ClientOpts(map[string]string{"subscribe": "ignored"}); err == nil {
		t.Error("missing bootstrap: want error")
	}
	opts, err := ClientOpts(map[string]string{
		"kafka.bootstrap.servers": "a:1", "kafka.security.protocol": "sasl_plaintext", "kafka.sasl.mechanism": "scram-sha-512",
		"kafka.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";`,
		"kafka.compression.type": "zstd", "kafka.linger.ms": "5", "topic": "other options are ignored",
	})
	if err != nil || len(opts) != 5 { // seeds, no client metrics, SASL, compression, linger
		t.Fatalf("%d opts, %v", len(opts), err)
	}
	if _, err := ClientOpts(map[string]string{"kafka.bootstrap.servers": "a:1", "kafka.value.serializer": "x"}); err == nil ||
		err.Error() != "Kafka option 'value.serializer' is not supported as value are serialized with ByteArraySerializer." {
		t.Errorf("serializer: %v", err)
	}

	// TLS from PEM files: a bad CA file and a lone certificate are errors.
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ClientOpts(map[string]string{"kafka.bootstrap.servers": "a:1", "kafka.security.protocol": "SSL", "kafka.ssl.ca.location": ca}); err == nil ||
		!strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Errorf("bad ca: %v", err)
	}
	if _, err := ClientOpts(map[string]string{"kafka.bootstrap.servers": "a:1", "kafka.security.protocol": "SSL", "kafka.ssl.certificate.location": ca}); err == nil ||
		!strings.Contains(err.Error(), "go together") {
		t.Errorf("lone cert: %v", err)
	}
	if _, err := ClientOpts(map[string]string{"kafka.bootstrap.servers": "a:1", "kafka.ssl.ca.location": ca}); err == nil ||
		!strings.Contains(err.Error(), "needs kafka.security.protocol SSL or SASL_SSL") {
		t.Errorf("ca without ssl: %v", err)
	}
	if _, err := ClientOpts(map[string]string{"kafka.bootstrap.servers": "a:1", "kafka.security.protocol": "SSL", "kafka.ssl.endpoint.identification.algorithm": ""}); err != nil {
		t.Errorf("no hostname verification: %v", err)
	}
}
