package kafka

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startCluster runs a separate one-broker kfake with extra options (SASL, TLS).
func startCluster(t *testing.T, opts ...kfake.Opt) string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(2, "sec")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// connects reports whether a source with opts can list the initial offsets of "sec". franz-go
// retries failed handshakes until the context ends, so failures take the whole timeout: tests
// expecting one pass a short timeout.
func connects(t *testing.T, addr string, opts map[string]string, timeout ...time.Duration) error {
	t.Helper()
	all := map[string]string{"kafka.bootstrap.servers": addr, "subscribe": "sec", "fetchOffset.numRetries": "1"}
	for k, v := range opts {
		all[k] = v
	}
	o, err := ParseSourceOptions(all)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSource(t.Context(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d := 10 * time.Second
	if len(timeout) > 0 {
		d = timeout[0]
	}
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	_, err = s.InitialOffsets(ctx)
	return err
}

func TestSASL(t *testing.T) {
	addr := startCluster(t, kfake.EnableSASL(), kfake.Superuser("PLAIN", "alice", "pw1"),
		kfake.Superuser("SCRAM-SHA-256", "bob", "pw2"), kfake.Superuser("SCRAM-SHA-512", "carol", "pw3"))
	jaas := func(module, user, pass string) string {
		return "org.apache.kafka.common.security." + module + " required username=\"" + user + "\" password=\"" + pass + "\";"
	}
	for _, tc := range []struct {
		mech, jaas string
		ok         bool
	}{
		{"PLAIN", jaas("plain.PlainLoginModule", "alice", "pw1"), true},
		{"SCRAM-SHA-256", jaas("scram.ScramLoginModule", "bob", "pw2"), true},
		{"SCRAM-SHA-512", jaas("scram.ScramLoginModule", "carol", "pw3"), true},
		{"PLAIN", jaas("plain.PlainLoginModule", "alice", "wrong"), false},
	} {
		var timeout []time.Duration
		if !tc.ok {
			timeout = append(timeout, 500*time.Millisecond)
		}
		err := connects(t, addr, map[string]string{"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": tc.mech, "kafka.sasl.jaas.config": tc.jaas}, timeout...)
		if (err == nil) != tc.ok {
			t.Errorf("%s %s: err = %v", tc.mech, tc.jaas, err)
		}
	}
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ckpt test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	serverCert := func(ips ...net.IP) tls.Certificate {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "broker"}, NotBefore: time.Now().Add(-time.Hour),
			NotAfter: time.Now().Add(time.Hour), IPAddresses: ips, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}

	good := startCluster(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{serverCert(net.ParseIP("127.0.0.1"))}}))
	if err := connects(t, good, map[string]string{"kafka.security.protocol": "SSL", "kafka.ssl.ca.location": caFile}); err != nil {
		t.Errorf("trusted CA: %v", err)
	}
	if err := connects(t, good, map[string]string{"kafka.security.protocol": "SSL"}, 500*time.Millisecond); err == nil {
		t.Error("system roots must not trust the test CA")
	}
	// A certificate without the broker's address: refused, unless hostname checks are off.
	wrongName := startCluster(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{serverCert(net.ParseIP("10.9.8.7"))}}))
	if err := connects(t, wrongName, map[string]string{"kafka.security.protocol": "SSL", "kafka.ssl.ca.location": caFile}, 500*time.Millisecond); err == nil {
		t.Error("hostname mismatch accepted")
	}
	if err := connects(t, wrongName, map[string]string{"kafka.security.protocol": "SSL", "kafka.ssl.ca.location": caFile, "kafka.ssl.endpoint.identification.algorithm": ""}); err != nil {
		t.Errorf("hostname check off: %v", err)
	}
}

// requestKeys records the requests a client sends.
type requestKeys struct {
	mu   sync.Mutex
	keys []int16
}

func (r *requestKeys) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	r.mu.Lock()
	r.keys = append(r.keys, key)
	r.mu.Unlock()
}

// ckpt's clients push no KIP-714 client metrics, though the broker asks for them: a client with
// franz-go's defaults, against the same broker, asks for its subscription and pushes at Close.
func TestClientOptsNoClientMetrics(t *testing.T) {
	opts, err := ClientOpts(map[string]string{"kafka.bootstrap.servers": testBroker.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	topic := newTopic(t, 1)
	// telemetry runs a client until it sent a telemetry request or for wait, and closes it.
	telemetry := func(wait time.Duration, opts ...kgo.Opt) []string {
		rec := &requestKeys{}
		cl, err := kgo.NewClient(append(opts, kgo.WithHooks(rec))...)
		if err != nil {
			t.Fatal(err)
		}
		// franz-go starts on its metrics at a client's first produce or fetch.
		if err := cl.ProduceSync(testCtx(t), &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		sent := func() []string {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			var out []string
			for _, k := range rec.keys {
				if k == kmsg.GetTelemetrySubscriptions.Int16() || k == kmsg.PushTelemetry.Int16() {
					out = append(out, kmsg.NameForKey(k))
				}
			}
			return out
		}
		// It asks for its subscription in the background.
		for deadline := time.Now().Add(wait); len(sent()) == 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		cl.Close()
		return sent()
	}
	if got := telemetry(10*time.Second, kgo.SeedBrokers(testBroker.Addr())); len(got) == 0 {
		t.Fatal("a client with franz-go's defaults sent no telemetry request: this broker does not ask for client metrics")
	}
	if got := telemetry(300*time.Millisecond, opts...); len(got) > 0 {
		t.Errorf("a ckpt client sent %v", got)
	}
}
