package embedkafka

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// javaClientCompat makes kfake answer the Java Kafka clients that Spark ships (kafka-clients 3.4
// in Spark 3.5, 3.9 in Spark 4.x) as they need, through the ApiVersions answer:
//
//   - ApiVersions v3 carries the broker's SupportedFeatures. kfake lists features whose minimum
//     version is 0 (as a Kafka 3.9+ broker supports them), but clients before 3.9 refuse any range
//     starting at 0 (SupportedVersionRange: "Expected minValue >= 1") and close the connection, so
//     Spark 3.5's consumers never fetch. Real brokers since KAFKA-17011 leave such features out of
//     answers below v4, which only 3.9+ clients send: so does this.
//   - kfake encodes DescribeTopicPartitions' EligibleLeaderReplicas and LastKnownELR as null
//     arrays where a real broker sends empty ones, and the 3.9 admin client (Spark 4's offset
//     reader) dereferences them (NullPointerException, retried until the query fails). To a Java
//     client (ClientSoftwareName apache-kafka-java) the broker does not advertise
//     DescribeTopicPartitions, so it describes topics with Metadata, as it does with brokers
//     before 3.8.
//
// Other answers, and every answer to other clients (franz-go), are kfake's own.
func javaClientCompat(ctx context.Context, c *kfake.Cluster, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName = "ckpt"
	req.ClientSoftwareVersion = "1"
	kresp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return fmt.Errorf("broker: read the ApiVersions answer: %w", err)
	}
	full := *kresp
	c.ControlKey(int16(kmsg.ApiVersions), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		r := kr.(*kmsg.ApiVersionsRequest)
		java := r.ClientSoftwareName == "apache-kafka-java"
		if r.Version >= 5 || r.Version < 3 || (r.Version == 4 && !java) {
			return nil, nil, false
		}
		c.KeepControl()
		resp := full
		resp.Version = r.Version
		resp.ApiKeys = nil
		for _, k := range full.ApiKeys {
			if java && k.ApiKey == int16(kmsg.DescribeTopicPartitions) {
				continue
			}
			resp.ApiKeys = append(resp.ApiKeys, k)
		}
		resp.SupportedFeatures = nil
		for _, f := range full.SupportedFeatures {
			if f.MinVersion >= 1 || r.Version >= 4 {
				resp.SupportedFeatures = append(resp.SupportedFeatures, f)
			}
		}
		resp.FinalizedFeatures = append([]kmsg.ApiVersionsResponseFinalizedFeature(nil), full.FinalizedFeatures...)
		return &resp, nil, true
	})
	return nil
}
