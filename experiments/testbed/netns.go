package testbed

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// DialIn connects to addr (an IPv4 literal and port) from inside the
// network namespace netns (a name under /run/netns, a Host's Netns): a
// harness running in the root namespace speaks to the testbed's hosts
// through it, since the testbed adds no address or route to the root
// namespace. The dial runs on a goroutine locked to a thread moved into
// netns; the socket stays in netns, and the thread is moved back before it
// is released. A thread that cannot be moved back is never released: its
// goroutine ends locked, which ends the thread, so no other goroutine ever
// runs in netns.
func DialIn(ctx context.Context, netns, addr string) (net.Conn, error) {
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

// dialLocked dials from netns on the calling locked thread; back reports
// whether the thread is in its own namespace again.
func dialLocked(ctx context.Context, netns, addr string) (c net.Conn, back bool, err error) {
	home, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, true, fmt.Errorf("testbed: own netns: %w", err)
	}
	defer home.Close()
	target, err := os.Open("/run/netns/" + netns)
	if err != nil {
		return nil, true, fmt.Errorf("testbed: netns %s: %w", netns, err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, true, fmt.Errorf("testbed: enter netns %s: %w", netns, err)
	}
	var d net.Dialer
	c, err = d.DialContext(ctx, "tcp4", addr)
	if serr := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); serr != nil {
		if c != nil {
			c.Close()
		}
		return nil, false, fmt.Errorf("testbed: leave netns %s: %w", netns, serr)
	}
	return c, true, err
}
