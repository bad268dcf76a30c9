//go:build !unix

package journal

// processAlive cannot tell here: every holder counts as alive, the safe answer.
func processAlive(int) bool { return true }
