package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// ErrInvalidPath is wrapped by every error caused by a path that is not a
// clean relative path inside the store root: absolute paths, ".." escaping the
// root, NUL bytes, an empty path where a file is needed, and (Local only) a
// symlink whose target lies outside the root. It also matches fs.ErrInvalid.
var ErrInvalidPath = fmt.Errorf("invalid path: %w", fs.ErrInvalid)

// ErrNotRegular is wrapped when a local path holds a named pipe, a device or a socket (itself or
// through a symbolic link) where a file is read: reading it could block forever (a FIFO without a
// writer) or never end (/dev/zero), so ckpt refuses it.
var ErrNotRegular = errors.New("not a regular file")

// notRegular is the error for a file of the given kind ("a named pipe (FIFO)").
func notRegular(kind string) error {
	return fmt.Errorf("%w: it is %s, which ckpt does not read (it could block or never end); a checkpoint holds only regular files", ErrNotRegular, kind)
}

// specialKind names a non-regular, non-directory file mode, "" for regular files and
// directories.
func specialKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return ""
}

// Join joins path elements with "/" and cleans the result like path.Join,
// except that the root is "" rather than ".". It does not validate: a result
// that escapes the root is rejected later by the Store that receives it.
func Join(elem ...string) string {
	p := path.Join(elem...)
	if p == "." {
		return ""
	}
	return p
}

// cleanPath validates p and returns its cleaned form, "" for the root.
// allowRoot says whether the root itself is a valid argument (directories are,
// files are not).
func cleanPath(p string, allowRoot bool) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%w: path contains a NUL byte", ErrInvalidPath)
	}
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%w: %q is absolute; store paths are relative to the root", ErrInvalidPath, p)
	}
	c := path.Clean(p)
	if c == "." {
		c = ""
	}
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%w: %q escapes the store root", ErrInvalidPath, p)
	}
	if c == "" && !allowRoot {
		return "", fmt.Errorf("%w: empty path names the root, not a file", ErrInvalidPath)
	}
	return c, nil
}

// PathError records a failed operation on one path of one store.
type PathError struct {
	// Op is the operation: list, walk, stat, read, open, write or delete
	// (the Op constants).
	Op string
	// URI is the store root as the user typed it (Store.URI).
	URI string
	// Path is the slash-separated path relative to the root, "" for the root.
	Path string
	// Err is the cause; errors.Is sees through it (fs.ErrNotExist,
	// fs.ErrExist, fs.ErrPermission, ErrInvalidPath, context errors, SDK
	// errors).
	Err error
}

// Location is the full location: the URI and the path joined with one "/".
func (e *PathError) Location() string {
	if e.Path == "" {
		return e.URI
	}
	if strings.HasSuffix(e.URI, "/") || strings.HasSuffix(e.URI, `\`) {
		return e.URI + e.Path
	}
	return e.URI + "/" + e.Path
}

// Error returns "<op> <location>: <cause>".
func (e *PathError) Error() string {
	return e.Op + " " + e.Location() + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *PathError) Unwrap() error { return e.Err }

func pathErr(op Op, uri, p string, err error) error {
	if err == nil {
		return nil
	}
	var pe *PathError
	if errors.As(err, &pe) && pe.URI == uri && pe.Path == p && pe.Op == string(op) {
		return err
	}
	return &PathError{Op: string(op), URI: uri, Path: p, Err: err}
}
