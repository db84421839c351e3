//go:build !race

package faults

// raceEnabled reports whether the race detector is compiled in.
const raceEnabled = false
