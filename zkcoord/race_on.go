//go:build race

package zkcoord

// raceEnabled reports whether the race detector is compiled in.
const raceEnabled = true
