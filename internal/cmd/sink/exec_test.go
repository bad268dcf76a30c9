package sink

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

var ctx = context.Background()

// writeSink writes batches 0..last of a file sink with compact interval 10, one data file per
// batch, as Spark does, and returns the files' bytes.
func writeSink(t *testing.T, s storage.Store, last int64) map[string][]byte {
	t.Helper()
	base := strings.TrimRight(s.URI(), "/")
	var all []logformat.SinkFileStatus
	files := map[string][]byte{}
	w := func(p string, b []byte) {
		if err := s.WriteFile(ctx, p, b); err != nil {
			t.Fatal(err)
		}
		files[p] = b
	}
	for b := int64(0); b <= last; b++ {
		name := fmt.Sprintf("part-%05d.json", b)
		w(name, []byte(fmt.Sprintf("{\"b\":%d}\n", b)))
		e := logformat.SinkFileStatus{Path: base + "/" + name, Size: int64(len(files[name])), ModificationTime: 1700000000000 + b, BlockReplication: 1, BlockSize: 1 << 25, Action: "add"}
		all = append(all, e)
		own, p := []logformat.SinkFileStatus{e}, path.Join(sinklog.Dir, fmt.Sprint(b))
		if sinklog.IsCompactionBatch(b, 10) {
			own, p = all, p+sinklog.CompactSuffix
		}
		w(p, (&logformat.SinkLog{Version: 1, Entries: own}).Marshal())
	}
	return files
}

func options(s storage.Store, action string) (*Options, *iostreams.IOStreams) {
	ios, _, _, _ := iostreams.Test()
	return &Options{IO: ios, Action: action, Output: s.URI(), Format: render.FormatJSON, CompactInterval: 10, Now: time.Now, Version: "test",
		OpenStore: func(context.Context, string) (storage.Store, error) { return s, nil }}, ios
}

// A damaged latest compaction file on each store: verify fails, repair --execute writes the
// rebuilt file (the damaged one moved into the backup), verify passes, and repair's undo
// restores the damaged bytes.
func TestRepairExecuteUndo(t *testing.T) {
	stores := map[string]func(t *testing.T) storage.Store{
		"mem": func(*testing.T) storage.Store { return storage.NewMem() },
		"local": func(t *testing.T) storage.Store {
			s, err := storage.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"s3": func(t *testing.T) storage.Store {
			client, bucket := storetest.S3Bucket(t)
			return storage.NewS3FromClient(client, bucket, "out")
		},
	}
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			s := mk(t)
			files := writeSink(t, s, 21)
			compact := sinklog.Dir + "/19.compact"
			good := files[compact]
			if err := s.Delete(ctx, compact); err != nil {
				t.Fatal(err)
			}
			damaged := append(append([]byte{}, good...), "\n{\"path\":"...)
			if err := s.WriteFile(ctx, compact, damaged); err != nil {
				t.Fatal(err)
			}

			o, _ := options(s, ActionVerify)
			if err := Run(ctx, o); exitcode.Code(err) != exitcode.Findings {
				t.Fatalf("verify of a damaged log: %v", err)
			}
			o, ios := options(s, ActionRepair)
			o.Apply.Execute, o.Apply.Yes, o.Apply.ActiveWindow = true, true, 0
			if err := Run(ctx, o); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Executed bool
				Journal  string
				Compacts []sinklog.CompactRebuild
			}
			if err := json.Unmarshal(ios.Out.(interface{ Bytes() []byte }).Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if !doc.Executed || len(doc.Compacts) != 1 || doc.Compacts[0].Salvaged != 1 {
				t.Fatalf("repair: %+v", doc)
			}
			if got, _ := s.ReadFile(ctx, compact); string(got) != string(good) {
				t.Fatalf("rebuilt %q, want Spark's %q", got, good)
			}
			o, _ = options(s, ActionVerify)
			if err := Run(ctx, o); err != nil {
				t.Fatalf("verify after repair: %v", err)
			}
			dir := doc.Journal[strings.Index(doc.Journal, journal.RepairsDir):]
			if _, err := journal.Undo(ctx, s, journal.Location{Store: s, Dir: dir}, journal.Options{}); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.ReadFile(ctx, compact); string(got) != string(damaged) {
				t.Fatalf("after undo %q", got)
			}
		})
	}
}
