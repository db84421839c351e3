package replica

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
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
	buf     []byte

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
		if nc, err = d.DialContext(c.ctx, "tcp", c.addr); err != nil {
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

// minReadBuf is the smallest read buffer of a client: one read(2) takes a
// response header and a small body together.
const minReadBuf = 64 << 10

func (c *client) exchange(nc net.Conn, frame []byte, wait time.Duration) (wire.ErrorCode, []byte, error) {
	if err := nc.SetDeadline(time.Now().Add(c.timeout + wait)); err != nil {
		return 0, nil, err
	}
	if _, err := nc.Write(frame); err != nil {
		return 0, nil, err
	}
	if cap(c.buf) < minReadBuf {
		c.buf = make([]byte, minReadBuf)
	}
	// Requests go one at a time, so whatever arrives belongs to this
	// response: read the header and as much of the body as is there.
	buf := c.buf[:cap(c.buf)]
	got, err := io.ReadAtLeast(nc, buf, wire.ResponseHeaderLen)
	if err != nil {
		return 0, nil, err
	}
	size := int32(binary.BigEndian.Uint32(buf[:4]))
	if size < 2 || size > maxResponse {
		return 0, nil, fmt.Errorf("replica: response size %d from %s", size, c.addr)
	}
	code := wire.ErrorCode(binary.BigEndian.Uint16(buf[4:]))
	total := wire.SizeLen + int(size)
	if got > total {
		return 0, nil, fmt.Errorf("replica: %d bytes from %s after a response of %d", got-total, c.addr, total)
	}
	if total > len(buf) {
		nb := make([]byte, total)
		copy(nb, buf[:got])
		c.buf, buf = nb, nb
	}
	if _, err := io.ReadFull(nc, buf[got:total]); err != nil {
		return 0, nil, err
	}
	return code, buf[wire.ResponseHeaderLen:total], nil
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
