// Package storage is ckpt's view of a checkpoint root: a flat, slash-separated
// namespace of immutable files on local disk, S3 (or an S3-compatible store),
// or memory.
//
// Every Store gives the guarantee Spark's HDFSMetadataLog relies on
// (CheckpointFileManager.createAtomic with overwriteIfPossible=false): a
// WriteFile (or Create, which streams a large file from a re-openable Source)
// either publishes the complete file or nothing, and it never
// replaces a file that already exists; the loser of a race gets an error
// wrapping fs.ErrExist and the winner's bytes stay. ckpt's repair depends on
// that: it must be impossible for it to clobber a batch file a running query
// wrote a moment earlier.
//
// Paths are always relative to the store root and slash-separated ("offsets/5").
// A path that is absolute or whose ".." elements climb above the root is
// rejected with an error wrapping ErrInvalidPath before any I/O happens, so a
// bug elsewhere in ckpt cannot turn a repair into a write outside the
// checkpoint. Local additionally refuses to write or delete through a symlink
// whose target lies outside the root.
//
// Directories are implicit on object stores: a directory exists while some
// file lies below it. Local also reports empty directories; the other stores
// cannot.
//
// Errors are *PathError values that name the operation and the full location;
// test them with errors.Is against fs.ErrNotExist, fs.ErrExist,
// fs.ErrPermission and ErrInvalidPath.
package storage
