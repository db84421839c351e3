//go:build race

package consumer_test

// raceEnabled: under the race detector sync.Pool drops objects at random, so
// pooled decompressors are reallocated and allocation bounds do not hold.
const raceEnabled = true
