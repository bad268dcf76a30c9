package transfer

import (
	"errors"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// A log file Spark reads whole costs cp at most logformat.MaxFileBytes (CKPT_MAX_FILE_BYTES):
// over it, cp refuses the copy naming the file and the limit. Before, a 1 GiB line cost over
// 1 GiB of memory.
func TestCopyCapsLogFiles(t *testing.T) {
	defer func(n int64) { logformat.MaxFileBytes = n }(logformat.MaxFileBytes)
	logformat.MaxFileBytes = 1 << 20
	for _, tc := range []struct{ kind, big string }{
		{KindCheckpoint, "offsets/1"},
		{KindCheckpoint, "commits/0"},
		{KindCheckpoint, "metadata"},
		{KindCheckpoint, "sources/0/1"},
		{KindSink, "_spark_metadata/1"},
	} {
		ck, out := storage.NewMem(), storage.NewMem()
		fixture(t, ck, out)
		src := ck
		if tc.kind == KindSink {
			src = out
		}
		e := &storetest.Endless{Store: src, Path: tc.big, T: t}
		_, err := Copy(ctx, []Pair{{tc.kind, e, storage.NewMem()}}, Options{})
		var le *logformat.Error
		if !errors.As(err, &le) || le.Kind != logformat.KindLineTooLong || le.File != tc.big {
			t.Errorf("%s: got %v, want the file refused as too large", tc.big, err)
		}
		if n := e.Read(); n > logformat.MaxFileBytes+64<<10 {
			t.Errorf("%s: read %d bytes of it, limit %d", tc.big, n, logformat.MaxFileBytes)
		}
	}
}

// A data file is not a log: any size is copied (whole, one file per worker).
func TestCappedOnlyLogs(t *testing.T) {
	for p, want := range map[string]bool{
		"metadata": true, "offsets/7": true, "commits/.7.crc": true, "sources/0/3": true,
		"sources/0/9.compact": false, "state/0/0/1.delta": false, "part-0": false,
	} {
		if got := capped(KindCheckpoint, p); got != want {
			t.Errorf("capped(checkpoint, %s) = %v, want %v", p, got, want)
		}
	}
	for p, want := range map[string]bool{"_spark_metadata/3": true, "_spark_metadata/9.compact": false, "part-0": false, "offsets/1": false} {
		if got := capped(KindSink, p); got != want {
			t.Errorf("capped(sink, %s) = %v, want %v", p, got, want)
		}
	}
}
