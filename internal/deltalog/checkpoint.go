package deltalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// checkpointActions is what ckpt reads of a checkpoint: the table id and the txn versions.
type checkpointActions struct {
	metadataID string
	txns       map[string]int64
}

// ckptRow is the projection of a checkpoint row ckpt reads: parquet-go converts each row of
// the checkpoint's schema (txn, add, remove, metaData, protocol, ...) to it, leaving out the
// other columns.
type ckptRow struct {
	Txn *struct {
		AppID   string `parquet:"appId,optional"`
		Version int64  `parquet:"version,optional"`
	} `parquet:"txn,optional"`
	MetaData *struct {
		ID string `parquet:"id,optional"`
	} `parquet:"metaData,optional"`
}

// MaxCheckpointBytes bounds a checkpoint part read into memory.
const MaxCheckpointBytes = 512 << 20

func readCheckpoint(ctx context.Context, s storage.Store, files []string) (*checkpointActions, error) {
	out := &checkpointActions{txns: map[string]int64{}}
	for _, f := range files {
		e, err := s.Stat(ctx, f)
		if err != nil {
			return nil, err
		}
		if e.Size > MaxCheckpointBytes {
			return nil, fmt.Errorf("%s: %d bytes, more than ckpt reads (%d)", f, e.Size, MaxCheckpointBytes)
		}
		data, err := s.ReadFile(ctx, f)
		if err != nil {
			return nil, err
		}
		if err := ParseCheckpoint(f, data, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ParseCheckpoint reads the metaData id and the txn actions of one checkpoint parquet file into
// out (a V2 checkpoint's JSON top-level file is not read).
func ParseCheckpoint(file string, data []byte, out *checkpointActions) (err error) {
	defer func() {
		// parquet-go panics on some malformed files; a damaged checkpoint is an error, not a crash.
		if r := recover(); r != nil {
			err = &Error{File: file, Expected: "a Delta checkpoint parquet file", Err: fmt.Errorf("%v", r)}
		}
	}()
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return &Error{File: file, Expected: "a Delta checkpoint parquet file", Err: err}
	}
	r := parquet.NewGenericReader[ckptRow](pf)
	defer r.Close()
	buf := make([]ckptRow, 256)
	for {
		n, rerr := r.Read(buf)
		for _, row := range buf[:n] {
			if row.Txn != nil && row.Txn.AppID != "" {
				out.txns[row.Txn.AppID] = row.Txn.Version
			}
			if row.MetaData != nil && row.MetaData.ID != "" {
				out.metadataID = row.MetaData.ID
			}
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return nil
			}
			return &Error{File: file, Expected: "readable checkpoint rows", Err: rerr}
		}
		if n == 0 {
			return nil
		}
	}
}
