package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// kafkaOptionNames are the kafka.* options ckpt understands, for the source, the sink and any
// other client (ClientOpts). Kafka's own names; JKS stores become PEM files (see docs/kafka.md).
var kafkaOptionNames = []string{
	"kafka.bootstrap.servers",
	"kafka.security.protocol",
	"kafka.sasl.mechanism",
	"kafka.sasl.jaas.config",
	"kafka.ssl.ca.location",
	"kafka.ssl.certificate.location",
	"kafka.ssl.key.location",
	"kafka.ssl.endpoint.identification.algorithm",
	"kafka.isolation.level",
	"kafka.client.id",
	"kafka.group.id",
	// Producer (sink) options.
	"kafka.compression.type",
	"kafka.linger.ms",
	"kafka.transaction.timeout.ms",
}

// clientConfig is the validated content of the kafka.* options.
type clientConfig struct {
	bootstrap     []string
	tls           *tls.Config
	mech          sasl.Mechanism
	readCommitted bool
	clientID      string
	compression   []kgo.CompressionCodec
	linger        time.Duration
	hasLinger     bool
	txnTimeout    time.Duration
}

// ClientOpts turns the kafka.* entries of o (a source's or sink's option map; other keys are
// ignored) into franz-go options: seed brokers, TLS, SASL, isolation level, client id and the
// producer settings. Every client ckpt opens for a query (source, sink, lag) uses these, so they
// all connect the same way. Unknown or invalid kafka.* options are an *OptionError.
//
// Defaults, as in Kafka: security.protocol PLAINTEXT; sasl.mechanism GSSAPI (not supported by
// ckpt: set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512); ssl.ca.location the system roots;
// ssl.endpoint.identification.algorithm https (hostname verified); isolation.level
// read_uncommitted; client.id franz-go's "kgo"; compression.type none; linger.ms franz-go's 10
// (AddBatch flushes at the end of a batch anyway); transaction.timeout.ms 60000 (Kafka's; the
// exactly-once sink sets it).
func ClientOpts(o map[string]string) ([]kgo.Opt, error) {
	kafka := map[string]string{}
	for k, v := range o {
		if strings.HasPrefix(strings.ToLower(k), "kafka.") {
			kafka[strings.ToLower(k)] = v
		}
	}
	if err := refusedKafkaOption(lowerKeys(kafka), false); err != nil {
		return nil, err
	}
	cfg, err := parseClientConfig(kafka)
	if err != nil {
		return nil, err
	}
	return cfg.opts(), nil
}

func (c *clientConfig) opts() []kgo.Opt {
	// No KIP-714 client metrics: a broker that asks for them (a metrics plugin, kfake) would
	// get a push at every Close, which allocates franz-go's lz4 buffers (8 MB) and waits for a
	// round trip, for a client that lives one command or one batch's read. Kafka's producer and
	// consumer push them by default (enable.metrics.push); ckpt's clients are its own.
	opts := []kgo.Opt{kgo.SeedBrokers(c.bootstrap...), kgo.DisableClientMetrics()}
	if c.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(c.tls))
	}
	if c.mech != nil {
		opts = append(opts, kgo.SASL(c.mech))
	}
	if c.readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if c.clientID != "" {
		opts = append(opts, kgo.ClientID(c.clientID))
	}
	if len(c.compression) > 0 {
		opts = append(opts, kgo.ProducerBatchCompression(c.compression...))
	}
	if c.hasLinger {
		opts = append(opts, kgo.ProducerLinger(c.linger))
	}
	if c.txnTimeout > 0 {
		opts = append(opts, kgo.TransactionTimeout(c.txnTimeout))
	}
	return append(opts, traceOpts()...)
}

// refusedKafkaOption returns Spark's error for the kafka.* options Spark refuses. source selects
// the consumer-side checks (KafkaSourceProvider.validateGeneralOptions), otherwise the producer's.
func refusedKafkaOption(p map[string]optEntry, source bool) error {
	if source {
		if _, ok := p["kafka.auto.offset.reset"]; ok {
			return optErr("kafka.auto.offset.reset", p["kafka.auto.offset.reset"].value, nil, "%s", "\n"+
				"Kafka option 'auto.offset.reset' is not supported.\n"+
				"Instead set the source option 'startingoffsets' to 'earliest' or 'latest'\n"+
				"to specify where to start. Structured Streaming manages which offsets are consumed\n"+
				"internally, rather than relying on the kafkaConsumer to do it. This will ensure that no\n"+
				"data is missed when new topics/partitions are dynamically subscribed. Note that\n"+
				"'startingoffsets' only applies when a new Streaming query is started, and\n"+
				"that resuming will always pick up from where the query left off. See the docs for more\n"+
				"details.\n         ")
		}
		if _, ok := p["kafka.key.deserializer"]; ok {
			return optErr("kafka.key.deserializer", "", nil, "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the keys.")
		}
		if _, ok := p["kafka.value.deserializer"]; ok {
			return optErr("kafka.value.deserializer", "", nil, "Kafka option 'value.deserializer' is not supported as values are deserialized as byte arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the values.")
		}
		for _, c := range []string{"enable.auto.commit", "interceptor.classes"} {
			if _, ok := p["kafka."+c]; ok {
				return optErr("kafka."+c, "", nil, "Kafka option '%s' is not supported", c)
			}
		}
		return nil
	}
	if _, ok := p["kafka.key.serializer"]; ok {
		return optErr("kafka.key.serializer", "", nil, "Kafka option 'key.serializer' is not supported as keys are serialized with ByteArraySerializer.")
	}
	if _, ok := p["kafka.value.serializer"]; ok {
		return optErr("kafka.value.serializer", "", nil, "Kafka option 'value.serializer' is not supported as value are serialized with ByteArraySerializer.")
	}
	return nil
}

// parseClientConfig validates kafka.* options (keys lower-cased, prefix kept).
func parseClientConfig(k map[string]string) (*clientConfig, error) {
	keys := make([]string, 0, len(k))
	for key := range k {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		if slices.Contains(kafkaOptionNames, key) {
			continue
		}
		switch key {
		case "kafka.ssl.truststore.location", "kafka.ssl.keystore.location", "kafka.ssl.truststore.password",
			"kafka.ssl.keystore.password", "kafka.ssl.truststore.type", "kafka.ssl.keystore.type", "kafka.ssl.key.password":
			return nil, optErr(key, k[key], []string{"kafka.ssl.ca.location", "kafka.ssl.certificate.location", "kafka.ssl.key.location"},
				"Kafka option '%s' (a Java key store) is not supported by ckpt: convert the stores to PEM files and set kafka.ssl.ca.location (truststore), kafka.ssl.certificate.location and kafka.ssl.key.location (keystore, unencrypted key)", strings.TrimPrefix(key, "kafka."))
		}
		return nil, optErr(key, k[key], kafkaOptionNames, "unknown Kafka client option '%s'; accepted: %s", key, strings.Join(kafkaOptionNames, ", "))
	}
	c := &clientConfig{}
	for _, s := range strings.Split(k["kafka.bootstrap.servers"], ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.bootstrap = append(c.bootstrap, s)
		}
	}
	if len(c.bootstrap) == 0 {
		return nil, optErr("kafka.bootstrap.servers", k["kafka.bootstrap.servers"], []string{"host:port[,host:port...]"},
			"Option 'kafka.bootstrap.servers' must list at least one host:port")
	}

	protocol := "PLAINTEXT"
	if v, ok := k["kafka.security.protocol"]; ok {
		protocol = strings.ToUpper(strings.TrimSpace(v))
	}
	protocols := []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}
	if !slices.Contains(protocols, protocol) {
		return nil, optErr("kafka.security.protocol", k["kafka.security.protocol"], protocols,
			"invalid value %q for Kafka option 'security.protocol': accepted values are %s", k["kafka.security.protocol"], strings.Join(protocols, ", "))
	}
	useTLS := protocol == "SSL" || protocol == "SASL_SSL"
	useSASL := strings.HasPrefix(protocol, "SASL_")
	for _, key := range []string{"kafka.ssl.ca.location", "kafka.ssl.certificate.location", "kafka.ssl.key.location", "kafka.ssl.endpoint.identification.algorithm"} {
		if _, ok := k[key]; ok && !useTLS {
			return nil, optErr(key, k[key], []string{"SSL", "SASL_SSL"}, "Kafka option '%s' needs kafka.security.protocol SSL or SASL_SSL (it is %s)", strings.TrimPrefix(key, "kafka."), protocol)
		}
	}
	for _, key := range []string{"kafka.sasl.mechanism", "kafka.sasl.jaas.config"} {
		if _, ok := k[key]; ok && !useSASL {
			return nil, optErr(key, "", []string{"SASL_PLAINTEXT", "SASL_SSL"}, "Kafka option '%s' needs kafka.security.protocol SASL_PLAINTEXT or SASL_SSL (it is %s)", strings.TrimPrefix(key, "kafka."), protocol)
		}
	}
	if useTLS {
		t, err := tlsConfig(k)
		if err != nil {
			return nil, err
		}
		c.tls = t
	}
	if useSASL {
		m, err := saslMechanism(k)
		if err != nil {
			return nil, err
		}
		c.mech = m
	}
	if v, ok := k["kafka.isolation.level"]; ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "read_uncommitted":
		case "read_committed":
			c.readCommitted = true
		default:
			return nil, optErr("kafka.isolation.level", v, []string{"read_uncommitted", "read_committed"},
				"invalid value %q for Kafka option 'isolation.level': accepted values are read_uncommitted, read_committed", v)
		}
	}
	c.clientID = k["kafka.client.id"]
	if v, ok := k["kafka.compression.type"]; ok {
		codecs := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}
		codec, ok := codecs[strings.ToLower(strings.TrimSpace(v))]
		if !ok {
			return nil, optErr("kafka.compression.type", v, []string{"none", "gzip", "snappy", "lz4", "zstd"},
				"invalid value %q for Kafka option 'compression.type': accepted values are none, gzip, snappy, lz4, zstd", v)
		}
		c.compression = []kgo.CompressionCodec{codec}
	}
	for _, d := range []struct {
		key string
		dst *time.Duration
		min int64
	}{{"kafka.linger.ms", &c.linger, 0}, {"kafka.transaction.timeout.ms", &c.txnTimeout, 1}} {
		if v, ok := k[d.key]; ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < d.min {
				return nil, optErr(d.key, v, []string{"milliseconds"}, "invalid value %q for Kafka option '%s': expected milliseconds, an integer >= %d", v, strings.TrimPrefix(d.key, "kafka."), d.min)
			}
			*d.dst = time.Duration(n) * time.Millisecond
			if d.key == "kafka.linger.ms" {
				c.hasLinger = true
			}
		}
	}
	return c, nil
}

// tlsConfig builds the TLS settings from PEM files, Kafka's ssl.* options in librdkafka's
// *.location spelling.
func tlsConfig(k map[string]string) (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if path, ok := k["kafka.ssl.ca.location"]; ok {
		pem, err := os.ReadFile(path)
		if err != nil {
			return nil, optErr("kafka.ssl.ca.location", path, nil, "Kafka option 'ssl.ca.location': %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, optErr("kafka.ssl.ca.location", path, nil, "Kafka option 'ssl.ca.location': %s holds no PEM certificate", path)
		}
		t.RootCAs = pool
	}
	certPath, hasCert := k["kafka.ssl.certificate.location"]
	keyPath, hasKey := k["kafka.ssl.key.location"]
	if hasCert != hasKey {
		return nil, optErr("kafka.ssl.certificate.location", certPath, nil, "Kafka options 'ssl.certificate.location' and 'ssl.key.location' go together: set both for a client certificate, or neither")
	}
	if hasCert {
		cert, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return nil, optErr("kafka.ssl.certificate.location", certPath, nil, "Kafka options 'ssl.certificate.location'/'ssl.key.location': %v", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	if v, ok := k["kafka.ssl.endpoint.identification.algorithm"]; ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "https":
		case "":
			// Kafka's "" turns off hostname verification only: the chain is still checked.
			roots := t.RootCAs
			t.InsecureSkipVerify = true
			t.VerifyConnection = func(cs tls.ConnectionState) error {
				if len(cs.PeerCertificates) == 0 {
					return errors.New("kafka: broker sent no certificate")
				}
				inter := x509.NewCertPool()
				for _, c := range cs.PeerCertificates[1:] {
					inter.AddCert(c)
				}
				_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
				return err
			}
		default:
			return nil, optErr("kafka.ssl.endpoint.identification.algorithm", v, []string{"https", `""`},
				"invalid value %q for Kafka option 'ssl.endpoint.identification.algorithm': accepted values are https and the empty string", v)
		}
	}
	return t, nil
}

// saslMechanism builds the SASL mechanism from sasl.mechanism and the credentials in
// sasl.jaas.config.
func saslMechanism(k map[string]string) (sasl.Mechanism, error) {
	mech := "GSSAPI" // Kafka's default
	if v, ok := k["kafka.sasl.mechanism"]; ok {
		mech = strings.ToUpper(strings.TrimSpace(v))
	}
	accepted := []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
	if !slices.Contains(accepted, mech) {
		return nil, optErr("kafka.sasl.mechanism", k["kafka.sasl.mechanism"], accepted,
			"Kafka SASL mechanism %q is not supported by ckpt (set kafka.sasl.mechanism): accepted values are %s", mech, strings.Join(accepted, ", "))
	}
	jaas, ok := k["kafka.sasl.jaas.config"]
	if !ok {
		return nil, optErr("kafka.sasl.jaas.config", "", nil, `Kafka option 'sasl.jaas.config' is required with SASL, e.g. org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`)
	}
	creds, err := parseJAAS(jaas)
	if err != nil {
		return nil, optErr("kafka.sasl.jaas.config", "", nil, "Kafka option 'sasl.jaas.config': %v", err)
	}
	user, pass := creds["username"], creds["password"]
	if user == "" {
		return nil, optErr("kafka.sasl.jaas.config", "", nil, `Kafka option 'sasl.jaas.config' has no username="…"`)
	}
	switch mech {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	default:
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
}

// parseJAAS reads the options of a one-entry JAAS line:
//
//	<LoginModule class> <required|requisite|sufficient|optional> key="value" key2=value2;
//
// Values may be quoted (with \" and \\ escapes) or bare. Only the options are returned.
func parseJAAS(s string) (map[string]string, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(s, ";")
	fields := strings.Fields(s)
	if len(fields) < 2 {
		return nil, errors.New(`expected "<LoginModule> required key=\"value\" ...;"`)
	}
	// Skip the login module class and the control flag.
	rest := strings.TrimSpace(s)
	for range 2 {
		rest = strings.TrimSpace(rest)
		i := strings.IndexFunc(rest, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' })
		if i < 0 {
			rest = ""
			break
		}
		rest = rest[i:]
	}
	flag := strings.ToLower(fields[1])
	if !slices.Contains([]string{"required", "requisite", "sufficient", "optional"}, flag) {
		return nil, fmt.Errorf("control flag %q is not one of required, requisite, sufficient, optional", fields[1])
	}
	out := map[string]string{}
	for {
		rest = strings.TrimSpace(rest)
		if rest == "" {
			return out, nil
		}
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 {
			return nil, fmt.Errorf("expected key=value at %q", rest)
		}
		key := strings.TrimSpace(rest[:eq])
		rest = strings.TrimLeft(rest[eq+1:], " \t")
		var val strings.Builder
		if strings.HasPrefix(rest, `"`) {
			i := 1
			closed := false
			for ; i < len(rest); i++ {
				c := rest[i]
				if c == '\\' && i+1 < len(rest) {
					i++
					val.WriteByte(rest[i])
					continue
				}
				if c == '"' {
					closed = true
					i++
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return nil, fmt.Errorf("unterminated quote in the value of %s", key)
			}
			rest = rest[i:]
		} else {
			i := strings.IndexAny(rest, " \t\n")
			if i < 0 {
				i = len(rest)
			}
			val.WriteString(rest[:i])
			rest = rest[i:]
		}
		out[key] = val.String()
	}
}
