package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

const (
	// readBufSize is the size of each connection's read buffer to begin
	// with. Frames that fit (small batches of messages, every fetch and
	// offsets request) are handled in place; it also lets one read(2)
	// pick up many pipelined small requests.
	readBufSize = 8 << 10
	// maxReadBufSize is what the read buffer grows to when a larger frame
	// arrives (a batch of 50 messages of 200 bytes is 10 KiB), so that
	// several such frames are read, and appended, together. Idle
	// connections that never sent one keep readBufSize.
	maxReadBufSize = 64 << 10
	// frameGrowStep is the first allocation for a frame larger than
	// maxReadBufSize; the buffer then doubles as bytes arrive.
	frameGrowStep = 64 << 10
	// maxRetainedFrame is the largest scratch buffer (merged produces) a
	// connection keeps between requests; larger ones are dropped after
	// use, so idle connections hold little memory.
	maxRetainedFrame = 256 << 10
)

// errFrame is wrapped by errors about a frame's size prefix.
var errFrame = errors.New("invalid request frame")

// conn is one client connection, served by one goroutine.
type conn struct {
	s      *Server
	nc     net.Conn
	remote string
	in     *readBuffer
	out    *responder
	peer   Peer // the listener and, after the TLS handshake, the peer's certificate

	body   []byte // frame buffer for frames larger than maxReadBufSize, dropped after each
	peeked int    // bytes of in holding the current frame(s), discarded after they are handled
	held   int64  // bytes taken from the server's budget: the read buffer's growth and body

	dlMu    sync.Mutex // guards stopped and the read deadline
	stopped bool       // set by stopReading: no deadline may replace the shutdown's
	// frameDeadline is when the frame being read must be complete
	// (connections.max.idle.ms after its size prefix); zero: none.
	frameDeadline time.Time

	// Scratch buffers of produce, reused from one request to the next;
	// they carry nothing from one request to the next.
	merged  []byte
	sets    [][]byte
	reqs    []wire.ProduceRequest
	checked []checked

	// handled is how many requests the frame being handled stood for
	// (PRODUCE requests pipelined behind it count), for the Observer.
	handled int
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{
		s:      s,
		nc:     nc,
		remote: nc.RemoteAddr().String(),
		in:     newReadBuffer(nc, readBufSize),
		out:    newResponder(nc, s.cfg.UseSendfile),
	}
}

// stopReading makes the connection's reads fail from now on (shutdown).
func (c *conn) stopReading() {
	c.dlMu.Lock()
	defer c.dlMu.Unlock()
	c.stopped = true
	if err := c.nc.SetReadDeadline(time.Unix(1, 0)); err != nil && !errors.Is(err, net.ErrClosed) {
		c.s.log.Debug("setting read deadline", "remote", c.remote, "err", err)
	}
}

// setReadDeadline sets the read deadline, unless shutdown has stopped the
// connection's reads.
func (c *conn) setReadDeadline(t time.Time) {
	c.dlMu.Lock()
	defer c.dlMu.Unlock()
	if c.stopped {
		return
	}
	if err := c.nc.SetReadDeadline(t); err != nil && !errors.Is(err, net.ErrClosed) {
		c.s.log.Debug("setting read deadline", "remote", c.remote, "err", err)
	}
}

// errIdle and errSlowFrame are wrapped by the read errors of connections
// closed by connections.max.idle.ms.
var (
	errIdle      = errors.New("idle connection")
	errSlowFrame = errors.New("request frame not complete in time")
)

// armIdle starts the wait for a request: reads fail after
// connections.max.idle.ms without one.
func (c *conn) armIdle() {
	if c.s.cfg.MaxIdle > 0 {
		c.setReadDeadline(time.Now().Add(c.s.cfg.MaxIdle))
	}
}

// armFrame gives the rest of a frame whose size prefix has arrived
// connections.max.idle.ms to arrive.
//
// Deviation: Kafka measures connections.max.idle.ms from a connection's
// last activity, so a client that sends a byte now and then holds a
// partial request for ever; here the whole frame must arrive within it.
func (c *conn) armFrame() {
	if c.s.cfg.MaxIdle > 0 {
		c.frameDeadline = time.Now().Add(c.s.cfg.MaxIdle)
		c.setReadDeadline(c.frameDeadline)
	}
}

// take takes n bytes from the server's request budget, waiting until the
// frame's deadline at most.
func (c *conn) take(n int) error {
	if err := c.s.mem.acquire(int64(n), c.frameDeadline, c.s.done); err != nil {
		return err
	}
	c.held += int64(n)
	return nil
}

// giveBack returns n bytes to the server's request budget.
func (c *conn) giveBack(n int) {
	c.held -= int64(n)
	c.s.mem.release(int64(n))
}

// serve reads and handles requests until the client goes away, sends
// something the broker must refuse, or the server shuts down. It closes the
// connection.
func (c *conn) serve() {
	defer c.nc.Close()
	defer func() { c.giveBack(int(c.held)) }()
	c.s.log.Debug("connection opened", "remote", c.remote)
	if err := c.handshake(); err != nil {
		c.s.log.Warn("closing connection: "+err.Error(), "remote", c.remote)
		return
	}
	for {
		frame, err := c.readFrame()
		if err != nil {
			c.logReadError(err)
			return
		}
		if err := c.handleFrame(frame); err != nil {
			c.logHandleError(err)
			return
		}
		c.release()
	}
}

// readFrame reads one request frame and returns it without its size
// prefix. The size is checked before anything is allocated: it must hold
// at least the request type and at most MaxRequestSize bytes. A frame that
// fits the read buffer (grown to maxReadBufSize if need be) is returned in
// place, valid until release; a larger one is read into a buffer that grows
// only as its bytes arrive.
//
// Waiting for a frame, reads fail after connections.max.idle.ms; once its
// size prefix is in, the rest must arrive within connections.max.idle.ms.
// Every byte held beyond the initial read buffer (the buffer grown to
// maxReadBufSize, the buffer of a larger frame) is first taken from the
// server's budget (queued.max.request.bytes).
func (c *conn) readFrame() ([]byte, error) {
	c.frameDeadline = time.Time{}
	if len(c.in.buffered()) < sizeFieldLen {
		c.armIdle()
	}
	if err := c.in.fill(sizeFieldLen); err != nil {
		switch {
		case errors.Is(err, io.EOF) && len(c.in.buffered()) > 0:
			err = io.ErrUnexpectedEOF // part of a size prefix
		case errors.Is(err, os.ErrDeadlineExceeded) && c.s.cfg.MaxIdle > 0:
			err = fmt.Errorf("%w: no request for connections.max.idle.ms (%v): %w", errIdle, c.s.cfg.MaxIdle, err)
		}
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(c.in.buffered()))
	switch {
	case size < 2:
		return nil, fmt.Errorf("%w: size %d cannot hold a request type", errFrame, size)
	case size > c.s.cfg.MaxRequestSize:
		return nil, fmt.Errorf("%w: size %d exceeds max.socket.request.bytes %d", errFrame, size, c.s.cfg.MaxRequestSize)
	}
	n := int(size)
	whole := sizeFieldLen + n
	if len(c.in.buffered()) < whole {
		c.armFrame()
	}
	if whole <= maxReadBufSize {
		if whole > c.in.size() {
			if err := c.take(maxReadBufSize - c.in.size()); err != nil {
				return nil, err
			}
			c.in.grow(maxReadBufSize)
		}
		if err := c.in.fill(whole); err != nil {
			return nil, c.truncated(err, len(c.in.buffered())-sizeFieldLen, n)
		}
		c.peeked = whole
		return c.in.buffered()[sizeFieldLen:whole], nil
	}
	c.in.discard(sizeFieldLen)
	var buf []byte
	for len(buf) < n {
		chunk := min(n-len(buf), max(len(buf), frameGrowStep))
		if cap(buf)-len(buf) < chunk {
			if err := c.take(len(buf) + chunk - cap(buf)); err != nil {
				return nil, err
			}
			grown := make([]byte, len(buf), len(buf)+chunk)
			copy(grown, buf)
			buf = grown
			c.body = buf
		}
		m, err := c.in.read(buf[len(buf) : len(buf)+chunk])
		buf = buf[:len(buf)+m]
		if err != nil {
			return nil, c.truncated(err, len(buf), n)
		}
	}
	c.body = buf
	return buf, nil
}

// truncated describes a frame cut short by the client going away, or not
// complete by its deadline.
func (c *conn) truncated(err error, got, want int) error {
	switch {
	case errors.Is(err, io.EOF):
		err = io.ErrUnexpectedEOF
	case errors.Is(err, os.ErrDeadlineExceeded) && c.s.cfg.MaxIdle > 0:
		err = fmt.Errorf("%w within connections.max.idle.ms (%v): %w", errSlowFrame, c.s.cfg.MaxIdle, err)
	}
	return fmt.Errorf("frame truncated after %d of %d bytes: %w", got, want, err)
}

// release discards the handled frame from the read buffer and drops the
// buffer of a large frame, giving its bytes back to the server's budget.
func (c *conn) release() {
	if c.peeked > 0 {
		c.in.discard(c.peeked)
		c.peeked = 0
	}
	if c.body != nil {
		c.giveBack(cap(c.body))
		c.body = nil
	}
	if cap(c.merged) > maxRetainedFrame {
		c.merged = nil
	}
	if cap(c.reqs) > maxMergedRequests+1 { // a large MULTIPRODUCE
		c.reqs, c.checked = nil, nil
	}
}

// handleFrame decodes and handles one request, and reports it to the
// Observer if there is one. An error closes the connection.
func (c *conn) handleFrame(frame []byte) error {
	obs := c.s.cfg.Observer
	if obs == nil {
		return c.handle(frame)
	}
	start := time.Now()
	c.handled = 1
	err := c.handle(frame)
	t := wire.RequestType(-1)
	if len(frame) >= 2 {
		t = wire.RequestType(binary.BigEndian.Uint16(frame))
	}
	obs.Request(t, c.handled, time.Since(start), err)
	return err
}

// handle decodes and handles one request.
func (c *conn) handle(frame []byte) error {
	if len(frame) >= 2 {
		if refused, err := c.listenerRefuses(wire.RequestType(binary.BigEndian.Uint16(frame))); refused || err != nil {
			return err
		}
	}
	if x := c.s.cfg.Extension; x != nil && len(frame) >= 2 && x.Handles(wire.RequestType(binary.BigEndian.Uint16(frame))) {
		return x.Serve(frame, &ResponseWriter{out: c.out, obs: c.s.cfg.Observer, peer: c.peer})
	}
	req, err := wire.DecodeRequest(frame)
	if err != nil {
		return err
	}
	switch req.Type {
	case wire.RequestProduce, wire.RequestMultiProduce:
		return c.produce(frame, req)
	case wire.RequestFetch:
		return c.fetch(req.Fetch[0])
	case wire.RequestMultiFetch:
		return c.multiFetch(req.Fetch)
	case wire.RequestOffsets:
		return c.offsets(req.Offsets)
	}
	return fmt.Errorf("%w: unhandled request type %v", wire.ErrMalformedRequest, req.Type)
}

// logReadError logs why reading stopped: quietly for a client that left or
// a shutdown, as a warning for a frame the broker refuses.
func (c *conn) logReadError(err error) {
	c.s.mu.Lock()
	closing := c.s.closing
	c.s.mu.Unlock()
	switch {
	case errors.Is(err, io.EOF):
		c.s.log.Debug("connection closed by client", "remote", c.remote)
	case closing && errors.Is(err, os.ErrDeadlineExceeded):
		c.s.log.Debug("connection closed for shutdown", "remote", c.remote)
	case errors.Is(err, errIdle):
		c.s.log.Debug("closing connection: "+err.Error(), "remote", c.remote)
	case errors.Is(err, errSlowFrame) || errors.Is(err, errBudget):
		c.s.log.Info("closing connection: "+err.Error(), "remote", c.remote)
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.s.log.Info("connection closed by client in the middle of a request", "remote", c.remote, "err", err)
	case errors.Is(err, errFrame):
		c.s.log.Warn("closing connection: "+err.Error(), "remote", c.remote)
	default:
		level := slog.LevelWarn
		if isDisconnect(err) {
			level = slog.LevelDebug
		}
		c.s.log.Log(context.Background(), level, "closing connection: read failed", "remote", c.remote, "err", err)
	}
}

// logHandleError logs why a request closed its connection.
func (c *conn) logHandleError(err error) {
	var ce *clientError
	switch {
	case errors.As(err, &ce) || errors.Is(err, wire.ErrMalformedRequest):
		c.s.log.Warn("closing connection: bad request", "remote", c.remote, "err", err)
	case isDisconnect(err) || errors.Is(err, os.ErrDeadlineExceeded):
		c.s.log.Debug("closing connection: write failed", "remote", c.remote, "err", err)
	default:
		c.s.log.Error("closing connection: request failed", "remote", c.remote, "err", err)
	}
}

// isDisconnect reports errors that mean the client went away.
func isDisconnect(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe)
}
