package checkpoint

import (
	"context"
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// InitialOffsetsPath is where source i's initial offsets live: "sources/<i>/0", written by
// the Kafka source the first time it needs its starting offsets.
func InitialOffsetsPath(source int) string { return fmt.Sprintf("%s/%d/0", DirSources, source) }

// ReadKafkaInitialOffsets reads and parses source i's sources/<i>/0 as the Kafka source's
// initial offsets (cached, as ReadFile). A missing file is an error wrapping fs.ErrNotExist; a
// file that does not parse is a *logformat.Error naming it. Every command reads that file
// through here (the engine, which writes it, through ReadKafkaInitialOffsetsFrom).
func (c *Checkpoint) ReadKafkaInitialOffsets(ctx context.Context, source int) (*logformat.KafkaInitialOffsets, error) {
	rel := InitialOffsetsPath(source)
	data, err := c.ReadFile(ctx, rel)
	if err != nil {
		return nil, err
	}
	return logformat.ParseKafkaInitialOffsets(rel, data)
}

// ReadKafkaInitialOffsetsFrom is ReadKafkaInitialOffsets straight from st, uncached: for the
// engine, which reads the file, writes it when missing, and must not see a cached absence.
func ReadKafkaInitialOffsetsFrom(ctx context.Context, st storage.Store, source int) (*logformat.KafkaInitialOffsets, error) {
	rel := InitialOffsetsPath(source)
	data, err := ReadCapped(ctx, st, rel)
	if err != nil {
		return nil, err
	}
	return logformat.ParseKafkaInitialOffsets(rel, data)
}
