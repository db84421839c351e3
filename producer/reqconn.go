package producer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// maxReplicationResponse bounds a METADATA or PRODUCE_ACKS response the
// producer reads; a larger size field means the peer is not speaking the
// protocol.
const maxReplicationResponse = 64 << 20

// errNoAnswer is wrapped by the error of a request whose connection closed
// before its answer came: a broker without the replication layer (a 2011
// broker) closes the connection of a METADATA request, as of any request
// type it does not know.
var errNoAnswer = errors.New("connection closed before the answer")

// errConnect is wrapped by the error of a request that could not connect.
var errConnect = errors.New("cannot connect")

// reqConn is the producer's request-response connection to one broker for
// the replication layer's requests, METADATA and PRODUCE_ACKS (0.8's
// SyncProducer with acks). Requests are written whole, in order, and may be
// pipelined: the broker answers a connection's requests in order, and a
// reader goroutine hands each answer to the oldest waiting request. Any
// failure closes the connection and fails every request waiting on it; the
// next request reconnects.
type reqConn struct {
	id  wire.BrokerID
	cfg *Config
	log *slog.Logger

	mu      sync.Mutex // guards every field below; held while a request is written
	addr    string
	conn    net.Conn          // nil when not connected
	waiting *waitQueue[reply] // the requests waiting on conn
	done    chan struct{}     // closed when conn's reader has returned
	closed  bool
}

// reply is the answer to one request: its error code and body, or err when
// none came.
type reply struct {
	code wire.ErrorCode
	body []byte
	err  error
}

func newReqConn(id wire.BrokerID, addr string, cfg *Config, log *slog.Logger) *reqConn {
	return &reqConn{id: id, addr: addr, cfg: cfg, log: log}
}

// roundTrip writes a request frame to the broker at addr and waits for its
// answer, at most wait (0: no limit) or until ctx ends. An error wraps
// errConnect when no connection could be made, errNoAnswer when the
// connection closed without an answer.
func (c *reqConn) roundTrip(ctx context.Context, addr string, frame []byte, wait time.Duration) (wire.ErrorCode, []byte, error) {
	ch, conn, err := c.send(ctx, addr, frame)
	if err != nil {
		return 0, nil, err
	}
	var expired <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		expired = t.C
	}
	select {
	case r := <-ch:
		return r.code, r.body, r.err
	case <-expired:
		c.dropIf(conn, "no answer in time")
		return 0, nil, c.errorf("no answer within %v", wait)
	case <-ctx.Done():
		// The answer would be handed to the next request: drop the
		// connection.
		c.dropIf(conn, "request abandoned")
		return 0, nil, c.errorf("%w", context.Cause(ctx))
	}
}

// send writes frame and returns the channel its answer comes on.
func (c *reqConn) send(ctx context.Context, addr string, frame []byte) (<-chan reply, net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, nil, ErrClosed
	}
	if addr != c.addr {
		c.dropLocked("broker address changed")
		c.addr = addr
	}
	if c.conn != nil {
		select {
		case <-c.done:
			c.dropLocked("connection closed")
		default:
		}
	}
	if c.conn == nil {
		nc, err := dialTCP(ctx, c.cfg.Dial, c.cfg.ConnectTimeout, c.addr)
		if err != nil {
			return nil, nil, c.errorf("%w: %w", errConnect, err)
		}
		// Every request waits for its answer.
		if err := nc.SetNoDelay(true); err != nil {
			return nil, nil, errors.Join(c.errorf("set TCP_NODELAY: %w", err), nc.Close())
		}
		c.conn, c.waiting, c.done = nc, &waitQueue[reply]{}, make(chan struct{})
		go readReplies(nc, c.waiting, c.done)
		c.log.Info("producer: connected for acknowledged sends", "broker", c.id, "addr", c.addr)
	}
	ch := c.waiting.push()
	if t := c.cfg.SocketTimeout; t > 0 {
		if err := c.conn.SetWriteDeadline(time.Now().Add(t)); err != nil {
			c.dropLocked("cannot set a deadline")
			return nil, nil, c.errorf("set write deadline: %w", err)
		}
	}
	if _, err := c.conn.Write(frame); err != nil {
		c.dropLocked("write failed")
		return nil, nil, c.errorf("write: %w", err)
	}
	return ch, c.conn, nil
}

// dropIf drops the connection if it is still conn.
func (c *reqConn) dropIf(conn net.Conn, why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == conn {
		c.dropLocked(why)
	}
}

// dropLocked closes the connection, if any, and waits for its reader, which
// fails every request still waiting.
func (c *reqConn) dropLocked(why string) {
	if c.conn == nil {
		return
	}
	if err := c.conn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		// (The reader closes a connection that failed; closing it again
		// is no news.)
		c.log.Warn("producer: close failed", "broker", c.id, "addr", c.addr, "err", err)
	}
	<-c.done
	c.conn = nil
	c.log.Info("producer: disconnected", "broker", c.id, "addr", c.addr, "why", why)
}

// close drops the connection for good.
func (c *reqConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.dropLocked("producer closed")
}

func (c *reqConn) errorf(format string, args ...any) error {
	return fmt.Errorf("producer: broker %d (%s): %w", c.id, c.addr, fmt.Errorf(format, args...))
}

// readReplies reads response frames from conn and hands each to the oldest
// waiting request, until the connection fails or carries an answer nobody
// asked for.
func readReplies(conn net.Conn, q *waitQueue[reply], done chan struct{}) {
	defer close(done)
	r := bufio.NewReader(conn)
	for {
		code, body, err := wire.ReadResponse(r, maxReplicationResponse)
		if err != nil {
			if errors.Is(err, wire.ErrMalformedResponse) {
				err = fmt.Errorf("producer: %w", err)
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
				err = fmt.Errorf("%w (%v)", errNoAnswer, err)
			}
			q.fail(reply{err: err})
			conn.Close()
			return
		}
		if !q.answer(reply{code: code, body: body}) {
			q.fail(reply{err: errors.New("producer: an answer nobody asked for: the peer is not speaking the protocol")})
			conn.Close()
			return
		}
	}
}

// isReset reports a connection the peer reset or closed under a write.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
