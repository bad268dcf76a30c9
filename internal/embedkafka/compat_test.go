package embedkafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// supportedFeatures sends ApiVersions at version v (as a Java client of that generation does) and
// returns the minimum version of every supported feature in the answer.
func supportedFeatures(t *testing.T, addr string, v int16) map[string]int16 {
	f, _ := apiVersions(t, addr, v, "apache-kafka-java")
	return f
}

// apiVersions returns the features (name → min version) and API keys of the answer to an
// ApiVersions request of version v from a client that names itself software.
func apiVersions(t *testing.T, addr string, v int16, software string) (map[string]int16, map[int16]bool) {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(kmsg.ApiVersions), v)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(vs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName = software
	req.ClientSoftwareVersion = "3.9.0"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version != v {
		t.Fatalf("answered at version %d, want %d", resp.Version, v)
	}
	if len(resp.ApiKeys) < 20 {
		t.Fatalf("only %d API keys in the answer", len(resp.ApiKeys))
	}
	out := map[string]int16{}
	for _, f := range resp.SupportedFeatures {
		out[f.Name] = f.MinVersion
	}
	keys := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		keys[k.ApiKey] = true
	}
	return out, keys
}

// Java clients are not offered DescribeTopicPartitions (kfake's null ELR arrays crash the 3.9
// admin client); other clients are, at every version.
func TestApiVersionsHideDescribeTopicPartitionsFromJava(t *testing.T) {
	b, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dtp := int16(kmsg.DescribeTopicPartitions)
	for _, v := range []int16{3, 4} {
		if _, keys := apiVersions(t, b.Addr(), v, "apache-kafka-java"); keys[dtp] || !keys[int16(kmsg.Metadata)] {
			t.Errorf("v%d answer to a Java client: DescribeTopicPartitions offered %v, Metadata %v", v, keys[dtp], keys[int16(kmsg.Metadata)])
		}
		if _, keys := apiVersions(t, b.Addr(), v, "kgo"); !keys[dtp] {
			t.Errorf("v%d answer to franz-go lacks DescribeTopicPartitions", v)
		}
	}
	if f, _ := apiVersions(t, b.Addr(), 4, "apache-kafka-java"); len(f) == 0 {
		t.Error("v4 answer to a Java client lost its features")
	}
}

// Kafka clients before 3.9 (Spark 3.5's 3.4) reject a supported feature whose range starts at 0:
// below v4 the broker leaves those out, as real brokers do since KAFKA-17011; v4 keeps them.
func TestApiVersionsFeaturesForOldJavaClients(t *testing.T) {
	b, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	v4 := supportedFeatures(t, b.Addr(), 4)
	zero := 0
	for _, min := range v4 {
		if min == 0 {
			zero++
		}
	}
	if zero == 0 {
		t.Fatalf("kfake no longer lists a feature from version 0 (%v): the compatibility layer may be obsolete", v4)
	}
	for i := 0; i < 3; i++ { // the control stays in place for every request
		v3 := supportedFeatures(t, b.Addr(), 3)
		for name, min := range v3 {
			if min < 1 {
				t.Errorf("v3 answer lists %s from version %d: a Kafka 3.4 client refuses it", name, min)
			}
		}
		for name, min := range v4 {
			if _, ok := v3[name]; min >= 1 && !ok {
				t.Errorf("v3 answer lost feature %s (min %d)", name, min)
			}
		}
	}
}
