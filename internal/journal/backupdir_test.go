package journal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// --backup-dir inside the checkpoint's own log directories is refused before anything changes;
// elsewhere (including _ckpt/ and a sibling) it is accepted.
func TestBackupDirInsideLogs(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	cpDir := filepath.Join(base, "ckpt")
	cp, err := storage.NewLocal(cpDir)
	if err != nil {
		t.Fatal(err)
	}
	journaltest.BuildScenario(t, "commits-ahead", cp)
	orig := journaltest.Snapshot(t, cp)
	p, err := newPlan(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	// A link outside the checkpoint that leads into its offsets/.
	if err := os.Symlink(filepath.Join(cpDir, "offsets"), filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	local := func(dir string) *Location {
		s, err := storage.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		return &Location{Store: s}
	}
	for _, tc := range []struct {
		name string
		root *Location
		want string // "" accepted, else the log name refused
	}{
		{"offsets", local(filepath.Join(cpDir, "offsets", "bk")), "offsets"},
		{"commits itself", local(filepath.Join(cpDir, "commits")), "commits"},
		{"state", local(filepath.Join(cpDir, "state", "0", "bk")), "state"},
		{"sources", local(filepath.Join(cpDir, "sources")), "sources"},
		{"metadata", local(filepath.Join(cpDir, "metadata", "bk")), "metadata"},
		{"sink log", local(filepath.Join(cpDir, "_spark_metadata")), "_spark_metadata"},
		{"through a link", local(filepath.Join(base, "link", "bk")), "offsets"},
		{"relative store dir", &Location{Store: cp, Dir: "offsets/bk"}, "offsets"},
		{"_ckpt", local(filepath.Join(cpDir, "_ckpt", "elsewhere")), ""},
		{"sibling", local(filepath.Join(base, "backups")), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := execOpts()
			o.BackupRoot = tc.root
			err := checkBackupRoot(cp, o.BackupRoot)
			var inside *BackupInsideError
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.As(err, &inside) || inside.Name != tc.want {
				t.Fatalf("err = %v, want a BackupInsideError naming %s", err, tc.want)
			}
			if _, err := Apply(ctx, cp, p, o); !errors.As(err, &inside) || !strings.Contains(err.Error(), "--backup-dir") {
				t.Fatalf("Apply = %v", err)
			}
			if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, cp)); d != "" {
				t.Fatalf("a refused repair changed the checkpoint:\n%s", d)
			}
		})
	}
	// Object stores compare by URI; s3a:// is s3://.
	m := storage.MemNamed("backupdir-test")
	cps, bks := m.Sub("ckpt"), m.Sub("ckpt/commits/bk")
	for _, tc := range []struct{ cp, bk, want string }{
		{"s3://b/ckpt", "s3a://b/ckpt/commits/bk", "commits"},
		{"s3://b/ckpt/", "s3://b/ckpt/state", "state"},
		{"s3://b/ckpt", "s3://b/ckpt2/offsets", ""},
		{"s3://b/ckpt", "s3://b/ckpt/_ckpt/x", ""},
	} {
		err := checkBackupRoot(uriStore{Store: cps, uri: tc.cp}, &Location{Store: uriStore{Store: bks, uri: tc.bk}})
		var inside *BackupInsideError
		if (tc.want == "") != (err == nil) || (err != nil && (!errors.As(err, &inside) || inside.Name != tc.want)) {
			t.Errorf("%s in %s: %v, want %q", tc.bk, tc.cp, err, tc.want)
		}
	}
}

// uriStore is a store with another URI (an S3 location, for URI comparisons).
type uriStore struct {
	storage.Store
	uri string
}

func (u uriStore) URI() string { return u.uri }
