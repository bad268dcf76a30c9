// Package shell quotes the POSIX shell commands ckpt prints (doctor's fixes, repair's and the
// position commands' closing lines), so that they can be pasted as they are.
package shell

import "strings"

// Quote quotes s for a POSIX shell when it needs it.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
