// Staged files: new state files written before the journal, placed by a copy.

package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// StagingDir holds the files a command streamed to the store before its journal: a new state
// file of `ckpt state repartition` is written once, to StagingDir/<run>/<its path>, and placed
// by an OpCopy from there, so neither the plan nor the journal holds its bytes (a gigabyte of
// state would be a gigabyte of memory). The journal's copy action names the staged file, whose
// digest it checks before placing it; undo deletes the placed file, as for any created file.
const StagingDir = Dir + "/staging"

// StagedPath is where a run's staged copy of p is.
func StagedPath(run, p string) string { return StagingDir + "/" + run + "/" + p }

// isStagedCopy reports whether a is the placement of a staged state file.
func isStagedCopy(a Action) bool {
	return a.Op == OpCopy && a.Store == "" && (IsStateFile(a.Path) || IsSSTFile(a.Path)) && strings.HasPrefix(a.From, StagingDir+"/")
}

// confineStaged checks a staged copy: a new state version file (or a RocksDB store's new SST file), from StagingDir/<run>/ and the
// same path, never through a symbolic link on local disk.
func confineStaged(s storage.Store, a Action, c *confinedDirs) error {
	confine := confineState
	if IsSSTFile(a.Path) {
		confine = confineSST // a RocksDB version's new SST file, only ever created
	}
	if err := confine(s, a.Path, c); err != nil {
		return err
	}
	if err := lexical(a.From); err != nil {
		return err
	}
	run, rest, ok := strings.Cut(strings.TrimPrefix(a.From, StagingDir+"/"), "/")
	if !ok || run == "" || rest != a.Path {
		return fmt.Errorf("%w: %q is not %s/<run>/%s", ErrOutside, a.From, StagingDir, a.Path)
	}
	if root, isLocal := localRoot(s); isLocal {
		return confineLocal(root, a.From, c)
	}
	return nil
}

// streamDigest hashes p as a stream (the absent digest when p is missing): a file that is only
// compared, never kept, costs no memory of its size.
func streamDigest(ctx context.Context, s storage.Store, p string) (Digest, error) {
	rc, err := s.Open(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	return Digest(hex.EncodeToString(h.Sum(nil))), nil
}

// placeStaged creates a.Path with the bytes of the staged a.From. On local disk it is a hard
// link (no byte copied; link(2) never replaces a file); elsewhere a streamed copy through the
// store. A file already there with the bytes it should have is a placement an earlier run made.
func placeStaged(ctx context.Context, s storage.Store, a Action) error {
	if root, ok := localRoot(s); ok {
		err := linkStaged(root, a)
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrExist) && !errors.Is(err, errNoLink) {
			return err
		}
		if errors.Is(err, fs.ErrExist) {
			return placedAlready(ctx, s, a, err)
		}
	}
	// The store streams the staged file, opened again for each attempt it makes.
	if err := s.Create(ctx, a.Path, storage.FileSource(s, a.From, a.Size)); err != nil {
		return placedAlready(ctx, s, a, err)
	}
	return nil
}

// placedAlready turns err into success when a.Path has the bytes a places (a write that landed
// though the store reported a failure, or a placement by an earlier run).
func placedAlready(ctx context.Context, s storage.Store, a Action, err error) error {
	if d, derr := streamDigest(ctx, s, a.Path); derr == nil && d == a.After {
		return nil
	}
	return err
}

// errNoLink is linkStaged's answer where the file system cannot link the staged file.
var errNoLink = errors.New("cannot hard link here")

// linkStaged links a.From to a.Path below root and syncs the directories it changed (a new
// partition's directory, and its parent, which gained it).
func linkStaged(root string, a Action) error {
	from := filepath.Join(root, filepath.FromSlash(a.From))
	to := filepath.Join(root, filepath.FromSlash(a.Path))
	dir := filepath.Dir(to)
	syncs := []string{dir}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		syncs = append(syncs, filepath.Dir(dir))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Link(from, to); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fs.ErrExist
		}
		return fmt.Errorf("%w: %v", errNoLink, err)
	}
	for _, d := range syncs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// RemoveStaged deletes staged files (StagingDir/<run>/...) from s, then the directories they
// leave empty, deepest first (a local store removes an empty one; object stores have none).
func RemoveStaged(ctx context.Context, s storage.Store, files []string) error {
	dirs := map[string]bool{}
	for _, f := range files {
		if err := del(ctx, s, f); err != nil {
			return err
		}
		for d := path.Dir(f); strings.HasPrefix(d, StagingDir+"/"); d = path.Dir(d) {
			dirs[d] = true
		}
	}
	ds := make([]string, 0, len(dirs))
	for d := range dirs {
		ds = append(ds, d)
	}
	sort.Slice(ds, func(i, j int) bool { return len(ds[i]) > len(ds[j]) })
	for _, d := range ds {
		_ = s.Delete(ctx, d) // what is not empty stays
	}
	return nil
}

// dropStaged removes the staged sources of j's placements once nothing needs them: the journal
// is done (every file placed) or undone (none is). Best effort: they are ckpt's own copies.
func dropStaged(ctx context.Context, st stores, j *Record) {
	var files []string
	for _, a := range j.Actions {
		if isStagedCopy(a.Action) {
			files = append(files, a.From)
		}
	}
	if len(files) > 0 {
		ctx := context.WithoutCancel(ctx)
		_ = RemoveStaged(ctx, st.cp, files)
		// The runs' markers too: a run killed after its journal was written cannot remove its
		// own (ClaimStaging), and nothing is staged into the run any more.
		runs := map[string]bool{}
		for _, f := range files {
			if run, _, ok := strings.Cut(strings.TrimPrefix(f, StagingDir+"/"), "/"); ok {
				runs[run] = true
			}
		}
		for run := range runs {
			_ = del(ctx, st.cp, stageOwnerPath(run))
		}
		if es, err := st.cp.List(ctx, StagingDir); err == nil && len(es) == 0 {
			_ = st.cp.Delete(ctx, StagingDir)
		}
	}
}
