//go:build race

package kafka

// raceEnabled scales record counts down: the race detector makes kfake about 10x slower.
const raceEnabled = true
