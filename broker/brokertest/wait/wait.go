// Package wait is the one way tests in this repository wait: they poll a
// condition until it holds, and fail with what they were waiting for when a
// deadline passes. Tests never sleep for a fixed time to let something happen.
package wait

import (
	"testing"
	"time"
)

// DefaultTimeout bounds For. It is generous: a condition that should hold
// within milliseconds may take seconds on a loaded 2-core CI machine with the
// race detector on, and a passing test never waits for the whole of it.
const DefaultTimeout = 10 * time.Second

// Polling starts at minPoll and doubles up to maxPoll, so a condition that
// holds quickly is seen quickly and a long wait does not spin.
const (
	minPoll = time.Millisecond
	maxPoll = 20 * time.Millisecond
)

// For polls cond until it returns true, failing the test after DefaultTimeout
// with "timed out after 10s waiting for <what>".
func For(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Within(t, DefaultTimeout, what, cond)
}

// Within polls cond until it returns true, failing the test after timeout
// with "timed out after <timeout> waiting for <what>".
func Within(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// Until polls cond until it returns true or timeout passes, and reports
// whether it held. For callers that fail in their own words, or that may be
// called from a goroutine other than the test's (where t.Fatal is not allowed).
func Until(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := minPoll
	for !cond() {
		select {
		case <-deadline.C:
			return cond()
		case <-time.After(poll):
		}
		if poll < maxPoll {
			poll *= 2
		}
	}
	return true
}
