package replica

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// maxResponse bounds a response this layer reads (a replica fetch of
// replica.fetch.max.bytes plus its header, or a metadata answer).
const maxResponse = 256 << 20

// client is one connection to a broker for the replication layer's own
// requests (follower fetches, epoch queries, the controller's orders).
// Not safe for concurrent use.
type client struct {
	addr    string
	timeout time.Duration
	resp    wire.ResponseReader
	// tls, if set, is the configuration to dial the peer's inter-broker
	// listener with (mutual TLS; see Manager.peerClient).
	tls *tls.Config

	// ctx ends when close is called, cancelling a dial in progress (a
	// partitioned broker must not hold a fetcher's halt for the dial
	// timeout).
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	nc     net.Conn // guarded by mu
	closed bool     // guarded by mu: interrupt was called
}

func newClient(addr string, timeout time.Duration) *client {
	ctx, cancel := context.WithCancel(context.Background())
	return &client{addr: addr, timeout: timeout, ctx: ctx, cancel: cancel}
}

// roundTrip sends a request frame and returns the response's code and body;
// the body aliases a buffer reused by the next call. Any error closes the
// connection (the next call redials).
func (c *client) roundTrip(frame []byte, wait time.Duration) (wire.ErrorCode, []byte, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, nil, net.ErrClosed
	}
	nc := c.nc
	c.mu.Unlock()
	if nc == nil {
		d := net.Dialer{Timeout: c.timeout}
		var err error
		if nc, err = c.dial(&d); err != nil {
			return 0, nil, err
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			nc.Close()
			return 0, nil, net.ErrClosed
		}
		c.nc = nc
		c.mu.Unlock()
	}
	code, body, err := c.exchange(nc, frame, wait)
	if err != nil {
		c.mu.Lock()
		if c.nc == nc {
			c.nc = nil
		}
		c.mu.Unlock()
		nc.Close()
	}
	return code, body, err
}

// dial connects to the peer and, with TLS, completes the handshake within
// the timeout.
func (c *client) dial(d *net.Dialer) (net.Conn, error) {
	if c.tls == nil {
		return d.DialContext(c.ctx, "tcp", c.addr)
	}
	td := tls.Dialer{NetDialer: d, Config: c.tls}
	ctx, cancel := context.WithTimeout(c.ctx, c.timeout)
	defer cancel()
	nc, err := td.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("replica: TLS to %s: %w", c.addr, err)
	}
	return nc, nil
}

func (c *client) exchange(nc net.Conn, frame []byte, wait time.Duration) (wire.ErrorCode, []byte, error) {
	// Requests go one at a time: RoundTrip reads ahead, and a byte beyond
	// the response is an error.
	code, body, err := c.resp.RoundTrip(nc, frame, time.Now().Add(c.timeout+wait), maxResponse)
	if errors.Is(err, wire.ErrMalformedResponse) {
		err = fmt.Errorf("replica: from %s: %w", c.addr, err)
	}
	return code, body, err
}

// close closes the connection; a call in progress fails, and later calls
// fail with net.ErrClosed. Safe to call from any goroutine.
func (c *client) close() {
	c.cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
}
