package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// ErrOutside is wrapped by every refusal to touch a path outside what repair may change. It also
// matches storage.ErrInvalidPath, so callers can test for either.
var ErrOutside = fmt.Errorf("repair refuses the path: %w", storage.ErrInvalidPath)

// mutableDirs are the only directories whose direct children repair changes. Spark's restart reads
// offsets/ and commits/; everything else (metadata, sources/<i>/0, state/) is either irreplaceable
// or not repair's business.
var mutableDirs = []string{"offsets", "commits"}

// Confine checks that repair may change p in s, before any I/O that changes it. The stores already
// reject paths that escape their root; this check is narrower and independent of them, so that a
// bug in plan construction, or an odd key listed from S3, cannot reach a file repair has no reason
// to change:
//
//   - p is clean, relative and slash-separated: no "..", ".", empty or backslash elements, no NUL;
//   - p is a direct child of offsets/ or commits/, or the checksum or temporary file of the root
//     metadata file; never metadata itself, sources/ (Kafka's initial offsets sources/<i>/0, which
//     Spark re-resolves from startingOffsets when missing), state/ or anything else;
//   - on local disk, neither p nor its directory is a symbolic link, so a delete or a restore cannot
//     act on a file elsewhere, and a byte-for-byte undo does not turn a link into a file.
func Confine(s storage.Store, p string) error { return confine(s, p, nil) }

// confine is Confine with the directories already confirmed in c (nil: none).
func confine(s storage.Store, p string, c *confinedDirs) error {
	if err := lexical(p); err != nil {
		return err
	}
	dir, name := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	ok := false
	for _, d := range mutableDirs {
		if dir == d {
			ok = true
		}
	}
	if dir == "" {
		// In the root only the leftovers of the metadata file: its Hadoop checksum and temporary
		// files. metadata itself holds the query id and is never touched.
		n := logformat.ParseName(name)
		ok = (n.Kind == logformat.NameChecksum || n.Kind == logformat.NameTemp) && n.Target == checkpoint.FileMetadata
	}
	if !ok {
		return fmt.Errorf("%w: %q is not a file directly in offsets/ or commits/", ErrOutside, p)
	}
	if root, isLocal := localRoot(s); isLocal {
		return confineLocal(root, p, c)
	}
	return nil
}

// confinedDirs are the local directories one run confirmed to be real directories inside their
// checkpoint root, so that checking 40,000 files of offsets/ and commits/ resolves the links of
// two directories, not of 40,000 paths. Each file is still checked itself (one Lstat): it must not
// be a link. The names checked against a confirmed directory are single elements (lexical has
// refused every "..", "." and empty element, and a name is what follows the last separator).
type confinedDirs struct {
	mu sync.Mutex
	ok map[string]bool
}

func newConfinedDirs() *confinedDirs { return &confinedDirs{ok: map[string]bool{}} }

func (c *confinedDirs) has(dir string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ok[dir]
}

func (c *confinedDirs) add(dir string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.ok[dir] = true
	c.mu.Unlock()
}

// lexical rejects any path that is not already in clean, relative form. It does not clean: a path
// that needs cleaning did not come from a listing and is refused rather than reinterpreted.
func lexical(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty path", ErrOutside)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%w: %q contains a NUL byte", ErrOutside, p)
	case strings.ContainsRune(p, '\\'):
		return fmt.Errorf("%w: %q contains a backslash", ErrOutside, p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%w: %q is absolute", ErrOutside, p)
	case path.Clean(p) != p:
		return fmt.Errorf("%w: %q is not a clean path", ErrOutside, p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." || el == "." || el == "" {
			return fmt.Errorf("%w: %q has a %q element", ErrOutside, p, el)
		}
	}
	return nil
}

// localRoot finds the root directory of a Local store, looking through wrappers (Faulty) that
// expose the store they wrap.
func localRoot(s storage.Store) (string, bool) {
	for range 8 {
		switch v := s.(type) {
		case *storage.Local:
			return v.Root(), true
		case interface{ Inner() storage.Store }:
			s = v.Inner()
		default:
			return "", false
		}
	}
	return "", false
}

func confineLocal(root, p string, c *confinedDirs) error {
	full := filepath.Join(root, filepath.FromSlash(p))
	if fi, err := os.Lstat(full); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%w: %s is a symbolic link; repair never acts through links", ErrOutside, full)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(full)
	key := root + "\x00" + dir
	if c.has(key) {
		return nil
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // nothing there yet; the store creates a plain directory
	}
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(realRoot, realDir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("%w: %s resolves to %s, outside the checkpoint %s", ErrOutside, dir, realDir, realRoot)
	}
	if rel != filepath.Dir(filepath.FromSlash(p)) {
		return fmt.Errorf("%w: %s is reached through a symbolic link (it resolves to %s)", ErrOutside, dir, realDir)
	}
	c.add(key) // only a directory that exists and is reached without links
	return nil
}

// logNames are the names in a checkpoint root (and a file sink's output directory) whose contents
// Spark lists, reads or purges: a backup directory inside one of them would be read as log files.
var logNames = []string{"offsets", "commits", "sources", "state", checkpoint.FileMetadata, "_spark_metadata"}

// BackupInsideError refuses a --backup-dir inside the checkpoint's own log directories.
type BackupInsideError struct {
	BackupDir, Checkpoint string
	// Name is the log directory (or file) of the checkpoint that would contain the backups.
	Name string
}

func (e *BackupInsideError) Error() string {
	name := e.Name
	if name != checkpoint.FileMetadata {
		name += "/"
	}
	return fmt.Sprintf("--backup-dir %s is inside %s of the checkpoint %s, which Spark lists, reads and purges: choose a directory outside offsets/, commits/, sources/, state/, metadata and _spark_metadata (the default, <checkpoint>/_ckpt/repairs, is safe)",
		e.BackupDir, name, e.Checkpoint)
}

// checkBackupRoot refuses a backup root inside one of the checkpoint's log directories. Local
// paths are compared after resolving symbolic links (of the part that exists); other stores by
// their URIs (s3a:// and s3n:// are s3://).
func checkBackupRoot(s storage.Store, root *Location) error {
	if root == nil {
		return nil
	}
	var rel string
	cpRoot, cpLocal := localRoot(s)
	bkRoot, bkLocal := localRoot(root.Store)
	switch {
	case cpLocal && bkLocal:
		cp, bk := realPath(cpRoot), realPath(filepath.Join(bkRoot, filepath.FromSlash(root.Dir)))
		r, err := filepath.Rel(cp, bk)
		if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
			return nil
		}
		rel = filepath.ToSlash(r)
	case !cpLocal && !bkLocal:
		cp, bk := normURI(s.URI()), normURI(root.URI())
		r, ok := strings.CutPrefix(bk, cp+"/")
		if !ok {
			return nil
		}
		rel = r
	default:
		return nil
	}
	first, _, _ := strings.Cut(rel, "/")
	for _, n := range logNames {
		if first == n {
			return &BackupInsideError{BackupDir: root.URI(), Checkpoint: s.URI(), Name: n}
		}
	}
	return nil
}

// realPath resolves the symbolic links of the longest existing prefix of p (the rest may not exist
// yet) and returns an absolute path.
func realPath(p string) string {
	p, _ = filepath.Abs(p)
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

func normURI(u string) string {
	for _, s := range []string{"s3a://", "s3n://"} {
		if strings.HasPrefix(u, s) {
			u = "s3://" + u[len(s):]
		}
	}
	return strings.TrimRight(u, "/")
}
