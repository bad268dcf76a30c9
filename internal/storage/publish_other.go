//go:build !linux

package storage

// publish gives the fsync'd temporary file tmp the name p unless p exists
// (fs.ErrExist), by a hard link; tmp is left for the caller to remove.
func publish(tmp, p string) (tmpLeft bool, err error) {
	return linkPublish(tmp, p)
}
