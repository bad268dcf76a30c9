package checkpoint_test

import (
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// sources/<i>/0 has one reader: missing is fs.ErrNotExist, unparsable a *logformat.Error naming
// the file, else the offsets.
func TestReadKafkaInitialOffsets(t *testing.T) {
	ctx := context.Background()
	s := storage.NewMem()
	if err := s.WriteFile(ctx, "sources/0/0", []byte("\x00v1\n{\"t\":{\"0\":7}}")); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteFile(ctx, "sources/1/0", []byte("\x00v1\nnot json")); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteFile(ctx, "offsets/0", []byte("v1\n{}\n{\"t\":{\"0\":7}}")); err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	ini, err := cp.ReadKafkaInitialOffsets(ctx, 0)
	if err != nil || ini.Offsets.Map()[logformat.TopicPartition{Topic: "t", Partition: 0}] != 7 {
		t.Fatalf("source 0: %+v %v", ini, err)
	}
	var le *logformat.Error
	if _, err := cp.ReadKafkaInitialOffsets(ctx, 1); !errors.As(err, &le) || le.File != "sources/1/0" {
		t.Fatalf("source 1: %v", err)
	}
	if _, err := cp.ReadKafkaInitialOffsets(ctx, 2); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("source 2: %v", err)
	}
	if p := checkpoint.InitialOffsetsPath(3); p != "sources/3/0" {
		t.Fatalf("path %q", p)
	}
}
