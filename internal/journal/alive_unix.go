//go:build unix

package journal

import (
	"errors"
	"syscall"
)

// processAlive reports whether pid is a running process of this host (signal 0 checks without
// sending anything; EPERM means it exists under another user).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
