package kit

import (
	"context"
	"fmt"
	"time"
)

// pollInterval is how often WaitFor checks its condition.
const pollInterval = 50 * time.Millisecond

// Exiter is what WaitFor watches while it waits: a process or container
// that may end on its own (a Proc, a Server).
type Exiter interface {
	// Exited reports whether it has ended, and why.
	Exited() (bool, error)
}

// WaitFor polls cond until it holds, and fails when p (which may be nil)
// exits first, ctx ends, or timeout passes; what names the awaited state in
// the error ("zookeeper serving").
func WaitFor(ctx context.Context, timeout time.Duration, what string, p Exiter, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return nil
		}
		if p != nil {
			if gone, why := p.Exited(); gone {
				return fmt.Errorf("kit: waiting for %s: %w", what, why)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kit: waiting for %s: not after %v", what, timeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kit: waiting for %s: %w", what, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}
