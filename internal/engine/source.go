package engine

import (
	"context"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// ReadLimit bounds the end offsets of one batch (Spark's ReadLimit).
type ReadLimit struct {
	// MaxRows is maxOffsetsPerTrigger (0: no maximum).
	MaxRows int64
	// MinRows is minOffsetsPerTrigger (0: no minimum); a batch waits for MinRows new records
	// until MaxTriggerDelay has passed since the last batch.
	MinRows         int64
	MaxTriggerDelay time.Duration
	// AllAvailable is ReadAllAvailable (Trigger.Once): no limit at all.
	AllAvailable bool
}

// Source is what the engine needs from a streaming source. internal/kafka implements it for
// Kafka (see kafkaSource); tests use fakes.
type Source interface {
	// Description is Spark's source description, e.g. KafkaV2[Subscribe[in]].
	Description() string
	// PrepareForTriggerAvailableNow makes later Latest calls plan against one snapshot of the
	// latest offsets, taken at the next call (Spark's SupportsTriggerAvailableNow).
	PrepareForTriggerAvailableNow()
	// DefaultReadLimit is the limit the source's options ask for (Spark's getDefaultReadLimit).
	DefaultReadLimit() ReadLimit
	// InitialOffsets resolves startingOffsets (written once to sources/0/0 by the engine).
	InitialOffsets(ctx context.Context) (logformat.KafkaOffsets, error)
	// Latest plans the end offsets of the next batch from start under limit. It reports data
	// loss as Spark does (an error with failOnDataLoss=true, warnings otherwise). latest is the
	// source's latest offsets before the limit was applied (progress "latestOffset"). An end
	// with no partitions means there is nothing to read (no batch).
	Latest(ctx context.Context, start logformat.KafkaOffsets, limit ReadLimit) (end, latest logformat.KafkaOffsets, warnings []string, err error)
	// Read delivers the rows of (start, end] per topic-partition, reading up to parallelism
	// partitions at once; fn may be called concurrently for different partitions and several
	// times for one partition, in offset order. rows is valid during fn only (the Kafka source
	// reuses the slice); the byte slices inside the rows stay valid.
	Read(ctx context.Context, start, end logformat.KafkaOffsets, parallelism int, fn func(tp logformat.TopicPartition, rows []transform.Row) error) error
	// Close releases the source's clients.
	Close()
}
