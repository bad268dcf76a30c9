//go:build !linux

package journal

// renameNoReplace is not available here: the mover checks and renames instead.
func renameNoReplace(from, to string) error { return errNoReplaceUnsupported }
