package sinklog

import (
	"context"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Dir is FileStreamSink.metadataDir: the file sink's log directory inside its output directory.
const Dir = "_spark_metadata"

// Locate says where a file sink's log is on a store opened at uri: "" when uri is the log
// directory itself (its last element is _spark_metadata), else Dir below the output directory.
// It is the one rule every command uses to find the log from what the user typed.
func Locate(uri string) string {
	uri = strings.TrimRight(uri, `/\`)
	if i := strings.LastIndexAny(uri, `/\`); i >= 0 {
		uri = uri[i+1:]
	}
	if uri == Dir {
		return ""
	}
	return Dir
}

// OutputDir is the output directory a location names: uri itself, or its parent when uri is
// the log directory (Locate gives "").
func OutputDir(uri string) string {
	if Locate(uri) != "" {
		return uri
	}
	uri = strings.TrimRight(uri, `/\`)
	i := strings.LastIndexAny(uri, `/\`)
	if i < 0 {
		return "."
	}
	if parent := strings.TrimRight(uri[:i], `/\`); parent != "" && !strings.HasSuffix(parent, ":") {
		return parent
	}
	return uri[:i+1] // a root: "/", "C:\", "s3://"
}

// LatestAt is Latest of the log Locate finds on store: the sink's latest batch id, and false
// when the log holds no batch (it is empty or missing).
func LatestAt(ctx context.Context, store storage.Store) (int64, bool, error) {
	return Latest(ctx, store, Locate(store.URI()))
}
