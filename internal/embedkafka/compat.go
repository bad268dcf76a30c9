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
// in Spark 3.5, 3.9 in Spark 4.x) as a real broker does.
//
// ApiVersions v3 carries the broker's SupportedFeatures. kfake lists features whose minimum
// version is 0 (as a Kafka 3.9+ broker supports them), but clients before 3.9 refuse any range
// starting at 0 (SupportedVersionRange: "Expected minValue >= 1") and close the connection, so
// Spark 3.5's consumers never fetch. Real brokers since KAFKA-17011 leave such features out of
// responses below v4, which only 3.9+ clients send: so does this. Answers to v4+ are kfake's own.
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
		if r.Version >= 4 || r.Version < 3 {
			return nil, nil, false
		}
		c.KeepControl()
		resp := full
		resp.Version = r.Version
		resp.ApiKeys = append([]kmsg.ApiVersionsResponseApiKey(nil), full.ApiKeys...)
		resp.SupportedFeatures = nil
		for _, f := range full.SupportedFeatures {
			if f.MinVersion >= 1 {
				resp.SupportedFeatures = append(resp.SupportedFeatures, f)
			}
		}
		resp.FinalizedFeatures = append([]kmsg.ApiVersionsResponseFinalizedFeature(nil), full.FinalizedFeatures...)
		return &resp, nil, true
	})
	return nil
}
