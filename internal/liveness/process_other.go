//go:build !unix

package liveness

// processAlive cannot ask the system here: it answers alive, so the heartbeat decides.
func processAlive(int) bool { return true }
