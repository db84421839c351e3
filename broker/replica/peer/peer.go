// Package peer is the connection of one broker to another's inter-broker
// listener for the cluster's own requests (Kafka 0.8's BlockingChannel):
// a follower's REPLICA_FETCH and OFFSET_FOR_LEADER_EPOCH
// (broker/replica), the controller's LEADER_AND_ISR and STOP_REPLICA
// (broker/controller), over mutual TLS when the broker has a keystore.
package peer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/clustertls"
	"github.com/netdb11/kafka/broker/wire"
)

// maxResponse bounds a response a Client reads (a replica fetch of
// replica.fetch.max.bytes plus its header, or a metadata answer).
const maxResponse = 256 << 20

// Client is one connection to a broker for the cluster's own requests
// (follower fetches, epoch queries, the controller's orders). It dials on
// the first request and again after an error. Not safe for concurrent use,
// except Close.
type Client struct {
	addr    string
	timeout time.Duration
	resp    wire.ResponseReader
	// tls, if set, is the configuration to dial the peer's inter-broker
	// listener with (mutual TLS; see For).
	tls *tls.Config

	// ctx ends when Close is called, cancelling a dial in progress (a
	// partitioned broker must not hold a fetcher's halt for the dial
	// timeout).
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	nc     net.Conn // guarded by mu
	closed bool     // guarded by mu: interrupt was called
}

// New returns a Client for the broker at addr, dialing with tlsConfig (nil:
// plaintext); timeout bounds the dial and each round trip.
func New(addr string, timeout time.Duration, tlsConfig *tls.Config) *Client {
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{addr: addr, timeout: timeout, tls: tlsConfig, ctx: ctx, cancel: cancel}
}

// For returns a Client for broker id's inter-broker listener at addr: over
// mutual TLS when ks (this broker's keystore) is set, the server's
// certificate required to be broker id's.
func For(ks *clustertls.Keystore, id wire.BrokerID, addr string, timeout time.Duration) *Client {
	var tc *tls.Config
	if ks != nil {
		tc = ks.ClientConfig(id)
	}
	return New(addr, timeout, tc)
}

// RoundTrip sends a request frame and returns the response's code and body;
// the body aliases a buffer reused by the next call. Any error closes the
// connection (the next call redials). wait extends the timeout for a
// request the peer may hold that long (a long-polled replica fetch).
func (c *Client) RoundTrip(frame []byte, wait time.Duration) (wire.ErrorCode, []byte, error) {
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
func (c *Client) dial(d *net.Dialer) (net.Conn, error) {
	if c.tls == nil {
		return d.DialContext(c.ctx, "tcp", c.addr)
	}
	td := tls.Dialer{NetDialer: d, Config: c.tls}
	ctx, cancel := context.WithTimeout(c.ctx, c.timeout)
	defer cancel()
	nc, err := td.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("peer: TLS to %s: %w", c.addr, err)
	}
	return nc, nil
}

func (c *Client) exchange(nc net.Conn, frame []byte, wait time.Duration) (wire.ErrorCode, []byte, error) {
	// Requests go one at a time: RoundTrip reads ahead, and a byte beyond
	// the response is an error.
	code, body, err := c.resp.RoundTrip(nc, frame, time.Now().Add(c.timeout+wait), maxResponse)
	if errors.Is(err, wire.ErrMalformedResponse) {
		err = fmt.Errorf("peer: from %s: %w", c.addr, err)
	}
	return code, body, err
}

// Close closes the connection; a call in progress fails, and later calls
// fail with net.ErrClosed. Safe to call from any goroutine.
func (c *Client) Close() {
	c.cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
}
