package journal

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
)

// verifySink checks, for a journal that changed a file sink's log with the checkpoint, that the
// two agree as Spark needs them to: the log holds every batch from its newest compaction up to
// the checkpoint's latest commit (a hole or a missing batch makes every read of the output
// fail), and no batch the checkpoint has no offsets for. It returns the disagreement, "" when
// there is none.
func verifySink(ctx context.Context, st stores, j *Record) (string, error) {
	if j.Sink == "" || st.sink == nil {
		return "", nil
	}
	cp, err := checkpoint.Load(ctx, st.cp)
	if err != nil {
		return "", err
	}
	es, err := st.sink.List(ctx, sinklog.Dir)
	if err != nil {
		return "", err
	}
	have := map[int64]bool{}
	latest, compact := int64(-1), int64(-1)
	for _, e := range es {
		name := path.Base(e.Path)
		if e.IsDir || !IsSinkLogFile(e.Path) || strings.HasSuffix(name, ".crc") {
			continue
		}
		n := logformat.ParseName(strings.TrimSuffix(name, ".compact"))
		if n.Kind != logformat.NameBatch {
			continue
		}
		have[n.Batch] = true
		latest = max(latest, n.Batch)
		if strings.HasSuffix(name, ".compact") {
			compact = max(compact, n.Batch)
		}
	}
	if c, ok := cp.Commits.Latest(); ok && latest < c {
		return fmt.Sprintf("the file sink's log %s ends at batch %d, but the checkpoint commits batch %d: every read of the output would fail on %s/%d",
			j.Sink, latest, c, sinklog.Dir, latest+1), nil
	}
	if l, ok := cp.Offsets.Latest(); ok && latest > l {
		return fmt.Sprintf("the file sink's log %s has batch %d, beyond the checkpoint's latest offsets %d: Spark would skip that batch's output", j.Sink, latest, l), nil
	}
	for b := max(compact, 0); b <= latest; b++ {
		if !have[b] {
			return fmt.Sprintf("the file sink's log %s has no batch %d below its latest %d: every read of the output would fail on it", j.Sink, b, latest), nil
		}
	}
	return "", nil
}
