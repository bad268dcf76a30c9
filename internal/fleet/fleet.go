// Package fleet finds the checkpoints below a folder or an S3 prefix, for the --recursive form of
// doctor, inspect and lag: one directory listing per level, no file read.
package fleet

import (
	"context"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/progress"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// DefaultMaxDepth is how many levels below the parent Find looks by default: enough for
// <root>/<team>/<app>/<query>/, bounded so that a typo at the root of a bucket ends.
const DefaultMaxDepth = 8

// Options tune Find. The zero value is the default.
type Options struct {
	// MaxDepth bounds the levels below the parent searched (default DefaultMaxDepth).
	MaxDepth int
}

// skipped are directories that never hold a checkpoint of their own: ckpt's journals and
// backups, a file sink's log, Spark's and Hadoop's temporary folders.
var skipped = map[string]bool{"_ckpt": true, "_spark_metadata": true, "_temporary": true, ".git": true}

// IsCheckpoint says whether a directory listing is a checkpoint's: checkpoint.IsCheckpoint, the
// one rule every command applies.
func IsCheckpoint(entries []storage.Entry) bool { return checkpoint.IsCheckpoint(entries) }

// Find returns the directories below the root of s that are checkpoints, relative to that root
// ("" when the root itself is one), sorted. It does not descend into a checkpoint.
func Find(ctx context.Context, s storage.Store, o Options) ([]string, error) {
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	var found []string
	level := []string{""}
	for depth := 0; depth <= o.MaxDepth && len(level) > 0; depth++ {
		progress.Stage(ctx, "looking for checkpoints")
		type res struct {
			cp   bool
			subs []string
			err  error
		}
		out := make([]res, len(level))
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8) // S3: a level's listings in parallel, a few at a time
		for i, dir := range level {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				es, err := s.List(ctx, dir)
				if err != nil {
					out[i].err = err
					return
				}
				if IsCheckpoint(es) {
					out[i].cp = true
					return
				}
				for _, e := range es {
					if e.IsDir && !skipped[path.Base(e.Path)] {
						out[i].subs = append(out[i].subs, e.Path)
					}
				}
			}()
		}
		wg.Wait()
		var next []string
		for i, r := range out {
			switch {
			case r.err != nil:
				return nil, r.err
			case r.cp:
				found = append(found, level[i])
				progress.Add(ctx, progress.Done, 1)
			}
			next = append(next, r.subs...)
		}
		level = next
	}
	sort.Strings(found)
	return found, nil
}

// Join is the location of rel below root as the user would type it: a path joined with the
// system's separator, or a URI (s3://bucket/prefix, file://…) with a slash.
func Join(root, rel string) string {
	if rel == "" {
		return root
	}
	if strings.Contains(root, "://") {
		return strings.TrimSuffix(root, "/") + "/" + rel
	}
	return filepath.Join(root, filepath.FromSlash(rel))
}
