package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// NoCheckpointBelow is the error of --recursive when nothing was found below loc: a path that does
// not exist is said as such ("no checkpoint below nope" read as if nope were an empty folder).
func NoCheckpointBelow(ctx context.Context, s storage.Store, loc string) error {
	if l, err := checkpoint.Detect(ctx, s); err == nil && l.Kind == checkpoint.KindMissing {
		what := "the path does not exist"
		if strings.HasPrefix(loc, "s3") {
			what = "no object has this prefix (check the bucket and the prefix)"
		}
		return exitcode.New(exitcode.Failure, fmt.Errorf("no checkpoint below %s: %s", loc, what))
	}
	return exitcode.New(exitcode.Failure, fmt.Errorf("no checkpoint below %s (a checkpoint is a folder with offsets/, commits/ or a metadata file)", loc))
}
