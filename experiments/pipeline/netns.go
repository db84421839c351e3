package pipeline

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// dialIn connects to addr from inside the network namespace netns (a name
// under /run/netns): the harness runs in the root namespace, and the
// testbed adds no address or route there. The dial runs on a goroutine
// locked to a thread moved into netns and back (as experiments/faults'
// dialIn); a thread that cannot be moved back is never released.
func dialIn(ctx context.Context, netns, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		c, back, err := dialLocked(ctx, netns, addr)
		if back {
			runtime.UnlockOSThread()
		}
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

func dialLocked(ctx context.Context, netns, addr string) (c net.Conn, back bool, err error) {
	home, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, true, fmt.Errorf("pipeline: own netns: %w", err)
	}
	defer home.Close()
	target, err := os.Open("/run/netns/" + netns)
	if err != nil {
		return nil, true, fmt.Errorf("pipeline: netns %s: %w", netns, err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, true, fmt.Errorf("pipeline: enter netns %s: %w", netns, err)
	}
	var d net.Dialer
	c, err = d.DialContext(ctx, "tcp4", addr)
	if serr := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); serr != nil {
		if c != nil {
			c.Close()
		}
		return nil, false, fmt.Errorf("pipeline: leave netns %s: %w", netns, serr)
	}
	return c, true, err
}

// dialer returns a dial function for a site: into its namespace, or plain.
func (s *site) dial(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if s.netns == "" {
		var d net.Dialer
		return d.DialContext(ctx, "tcp4", addr)
	}
	return dialIn(ctx, s.netns, addr)
}
