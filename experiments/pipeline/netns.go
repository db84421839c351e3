package pipeline

import (
	"context"
	"net"
	"time"

	"github.com/netdb11/kafka/experiments/testbed"
)

// dial connects to addr from a site: from inside its namespace
// (testbed.DialIn), or plainly when the site is local.
func (s *site) dial(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if s.netns == "" {
		var d net.Dialer
		return d.DialContext(ctx, "tcp4", addr)
	}
	return testbed.DialIn(ctx, s.netns, addr)
}
