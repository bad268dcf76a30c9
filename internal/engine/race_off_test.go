//go:build !race

package engine

// raceEnabled scales tests down under -race.
const raceEnabled = false
