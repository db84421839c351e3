package producer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// maxConnectBackoff caps the wait between connection attempts (0.7's
// SyncProducer: 1 ms, times 10 per failure, at most 60 s).
const maxConnectBackoff = 60 * time.Second

// brokerConn is the producer's connection to one broker (0.7's SyncProducer):
// it connects lazily, writes one frame per request, and reconnects after a
// failure, after reconnect.interval requests or reconnect.time.interval.ms.
//
// A PRODUCE connection carries nothing from the broker, so a watcher
// goroutine blocks in Read: when it returns, the broker has closed the
// connection (or sent something it should not), and the next write
// reconnects first instead of writing into a dead socket.
type brokerConn struct {
	id  wire.BrokerID
	cfg *Config
	log *slog.Logger

	mu          sync.Mutex      // guards every field below
	addr        string          // where to connect
	conn        *net.TCPConn    // nil when not connected
	raw         syscall.RawConn // conn's file descriptor, for tryWrite
	dead        chan struct{}   // closed by the watcher when conn is unusable
	watcherDone chan struct{}   // closed when the watcher has returned
	sent        int             // requests written on conn
	connectedAt time.Time
	deadline    time.Time // write deadline currently set on conn
	closed      bool

	// The state of tryWrite's one attempt: the bytes to write, how many
	// were written, the error. writeOnce is tryWrite's function, made once
	// so that a write allocates nothing.
	pending   []byte
	written   int
	writeErr  error
	writeOnce func(fd uintptr) bool
}

func newBrokerConn(id wire.BrokerID, addr string, cfg *Config, log *slog.Logger) *brokerConn {
	return &brokerConn{id: id, addr: addr, cfg: cfg, log: log}
}

// write sends one whole request frame to the broker at addr (when the
// broker moved, the old connection is dropped). On error the connection is
// dropped (there is no telling how much of the frame the broker got) and the
// next write reconnects.
func (b *brokerConn) write(ctx context.Context, addr string, frame []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	if addr != b.addr {
		b.dropLocked("broker address changed")
		b.addr = addr
	}
	if b.conn != nil {
		select {
		case <-b.dead:
			b.dropLocked("connection closed by the broker")
		default:
		}
	}
	if b.conn == nil {
		if err := b.connectLocked(ctx); err != nil {
			return err
		}
	}
	now := time.Now()
	if t := b.cfg.SocketTimeout; t > 0 && b.deadline.Sub(now) < t*3/4 {
		b.deadline = now.Add(t)
		if err := b.conn.SetWriteDeadline(b.deadline); err != nil {
			b.dropLocked("cannot set a deadline")
			return b.errorf("set write deadline: %w", err)
		}
	}
	var err error
	cancelled := false
	if ctx.Done() == nil {
		_, err = b.conn.Write(frame)
	} else {
		cancelled, err = b.writeWatchingLocked(ctx, frame)
	}
	if cancelled {
		// The context ended during the write: the deadline was moved.
		b.dropLocked("context ended during a write")
		if err == nil {
			return nil
		}
		return b.errorf("write: %w", context.Cause(ctx))
	}
	if err != nil {
		b.dropLocked("write failed")
		return b.errorf("write: %w", err)
	}
	b.sent++
	if b.sent >= b.cfg.ReconnectInterval ||
		(b.cfg.ReconnectTimeInterval >= 0 && now.Sub(b.connectedAt) >= b.cfg.ReconnectTimeInterval) {
		b.dropLocked("reconnect interval reached")
	}
	return nil
}

// writeWatchingLocked writes frame, giving up when ctx ends (the write
// deadline is then moved to the past). cancelled reports that ctx ended
// during the write, whether or not the write completed.
//
// Only a write that has to wait for room in the socket needs to watch ctx,
// and most do not: so the first attempt is made without watching, which
// would cost an allocation and a registration on ctx per request.
func (b *brokerConn) writeWatchingLocked(ctx context.Context, frame []byte) (cancelled bool, err error) {
	n, err := b.tryWriteLocked(frame)
	if err != nil || n == len(frame) {
		return false, err
	}
	conn := b.conn
	stop := context.AfterFunc(ctx, func() { _ = conn.SetWriteDeadline(time.Unix(1, 0)) })
	_, err = conn.Write(frame[n:])
	return !stop(), err
}

// tryWriteLocked makes one attempt to write frame without waiting: it
// returns how many bytes the socket took, all of them unless its send
// buffer is full. It fails as conn.Write does when the connection is
// closed or its write deadline has passed.
func (b *brokerConn) tryWriteLocked(frame []byte) (int, error) {
	b.pending, b.written, b.writeErr = frame, 0, nil
	err := b.raw.Write(b.writeOnce)
	b.pending = nil
	if err == nil {
		err = b.writeErr
	}
	return b.written, err
}

// writeOnceLocked is the function tryWriteLocked runs on the socket: one
// write(2) of b.pending (again if interrupted), never waiting.
func (b *brokerConn) writeOnceLocked(fd uintptr) bool {
	for {
		n, err := syscall.Write(int(fd), b.pending)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			n, err = 0, nil
		case err != nil:
			n = 0
			err = os.NewSyscallError("write", err)
		}
		b.written, b.writeErr = n, err
		return true // done: tryWriteLocked never waits
	}
}

func (b *brokerConn) errorf(format string, args ...any) error {
	return fmt.Errorf("producer: broker %d (%s): %w", b.id, b.addr, fmt.Errorf(format, args...))
}

// connectLocked dials the broker, retrying with a growing backoff for up to
// connect.timeout.ms.
func (b *brokerConn) connectLocked(ctx context.Context) error {
	start := time.Now()
	backoff := time.Millisecond
	for {
		remaining := b.cfg.ConnectTimeout - time.Since(start)
		d := net.Dialer{Timeout: remaining, KeepAlive: 15 * time.Second}
		c, err := d.DialContext(ctx, "tcp", b.addr)
		if err == nil {
			return b.startLocked(c.(*net.TCPConn))
		}
		if ctx.Err() != nil {
			return b.errorf("connect: %w", context.Cause(ctx))
		}
		if time.Since(start)+backoff >= b.cfg.ConnectTimeout {
			return b.errorf("connect: gave up after %v: %w", b.cfg.ConnectTimeout, err)
		}
		b.log.Warn("producer: connect failed, retrying", "broker", b.id, "addr", b.addr, "backoff", backoff, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return b.errorf("connect: %w", context.Cause(ctx))
		case <-t.C:
		}
		backoff = min(backoff*10, maxConnectBackoff)
	}
}

func (b *brokerConn) startLocked(c *net.TCPConn) error {
	fail := func(what string, err error) error {
		return errors.Join(b.errorf("%s: %w", what, err), c.Close())
	}
	if err := c.SetNoDelay(b.cfg.NoDelay); err != nil {
		return fail("set TCP_NODELAY", err)
	}
	if b.cfg.BufferSize > 0 {
		if err := c.SetWriteBuffer(b.cfg.BufferSize); err != nil {
			return fail("set send buffer", err)
		}
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return fail("get the socket", err)
	}
	if b.writeOnce == nil {
		b.writeOnce = b.writeOnceLocked
	}
	b.conn, b.raw, b.sent, b.connectedAt, b.deadline = c, raw, 0, time.Now(), time.Time{}
	b.dead, b.watcherDone = make(chan struct{}), make(chan struct{})
	go watch(c, b.dead, b.watcherDone)
	b.log.Info("producer: connected", "broker", b.id, "addr", b.addr)
	return nil
}

// watch blocks reading a produce connection, on which the broker never
// writes, and closes dead when the read returns: the connection is closed,
// broken, or the peer is not speaking the protocol.
func watch(c *net.TCPConn, dead, done chan struct{}) {
	defer close(done)
	var buf [1]byte
	_, _ = c.Read(buf[:])
	close(dead)
}

// dropLocked closes the connection, if any, and waits for its watcher. A
// close error is logged as well as returned, since callers that drop a
// connection after a failure report that failure instead.
func (b *brokerConn) dropLocked(why string) error {
	if b.conn == nil {
		return nil
	}
	err := b.conn.Close()
	<-b.watcherDone
	b.conn, b.raw = nil, nil
	b.log.Info("producer: disconnected", "broker", b.id, "addr", b.addr, "why", why)
	if err != nil {
		b.log.Warn("producer: close failed", "broker", b.id, "addr", b.addr, "err", err)
		return b.errorf("close: %w", err)
	}
	return nil
}

// close drops the connection for good.
func (b *brokerConn) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return b.dropLocked("producer closed")
}
