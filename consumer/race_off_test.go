//go:build !race

package consumer_test

const raceEnabled = false
