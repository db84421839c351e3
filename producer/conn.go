package producer

import (
	"bufio"
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

// maxConnectBackoff caps the wait between connection attempts (0.7's
// SyncProducer: 1 ms, times 10 per failure, at most 60 s).
const maxConnectBackoff = 60 * time.Second

// brokerConn is the producer's connection to one broker (0.7's SyncProducer):
// it connects lazily, writes one frame per request, and reconnects after a
// failure, after reconnect.interval requests or reconnect.time.interval.ms.
//
// A PRODUCE has no response, so a watcher goroutine blocks in Read: when
// it returns, the broker has closed the connection (or sent something it
// should not), and the next write reconnects first instead of writing into
// a dead socket. The only answers on the connection are those of the
// OFFSETS requests confirm sends; the watcher hands them, in order, to the
// confirmations waiting for them.
type brokerConn struct {
	id  wire.BrokerID
	cfg *Config
	log *slog.Logger
	// lost is told of messages written on a connection that went away
	// before a confirmation covered them.
	lost func(n int, cause error)

	mu          sync.Mutex      // guards every field below
	addr        string          // where to connect
	conn        *net.TCPConn    // nil when not connected
	raw         syscall.RawConn // conn's file descriptor, for tryWrite
	dead        chan struct{}   // closed by the watcher when conn is unusable
	watcherDone chan struct{}   // closed when the watcher has returned
	sent        int             // requests written on conn
	writes      int             // writes of produce requests, on every connection (tests)
	connectedAt time.Time
	deadline    time.Time // write deadline currently set on conn
	closed      bool
	retire      bool             // reconnect before the next write (reconnect.interval)
	answers     *waitQueue[bool] // round trips waiting on conn, in order: true answered, false not
	// unconfirmed counts the messages written on conn, by writes that
	// asked for it, that no confirmation covers yet; lastTopic is the topic
	// of the last write, which a confirmation asks about.
	unconfirmed int
	lastTopic   string

	// The state of tryWrite's one attempt: the bytes to write, how many
	// were written, the error. writeOnce is tryWrite's function, made once
	// so that a write allocates nothing.
	pending   []byte
	written   int
	writeErr  error
	writeOnce func(fd uintptr) bool
}

func newBrokerConn(id wire.BrokerID, addr string, cfg *Config, log *slog.Logger, lost func(int, error)) *brokerConn {
	return &brokerConn{id: id, addr: addr, cfg: cfg, log: log, lost: lost}
}

// write sends whole request frames, PRODUCE or MULTIPRODUCE to topic,
// requests of them one after the other in one write (one frame, but for
// the async sender's runs), to the broker at addr (when the broker moved, the old connection is
// dropped). On error the connection is dropped (there is no telling how
// much of the frame the broker got) and the next write reconnects.
// unconfirmed is the number of messages the frames carry that the caller
// does not confirm itself: they count as lost if the connection goes away
// before a later confirmation covers them. The connection is retired after
// the write that reaches reconnect.interval requests.
func (b *brokerConn) write(ctx context.Context, addr, topic string, frame []byte, unconfirmed, requests int) error {
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
	if b.conn != nil && b.retire {
		if b.unconfirmed > 0 {
			// What was written on this connection is confirmed before it
			// goes; a failure is counted by the drop.
			_ = b.confirmLocked(ctx, b.lastTopic, 0)
		}
		b.dropLocked("reconnect interval reached")
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
	b.sent += requests
	b.writes++
	b.unconfirmed += unconfirmed
	b.lastTopic = topic
	if b.sent >= b.cfg.ReconnectInterval ||
		(b.cfg.ReconnectTimeInterval >= 0 && now.Sub(b.connectedAt) >= b.cfg.ReconnectTimeInterval) {
		b.retire = true // after a confirmation of this request, if any
	}
	return nil
}

// confirm ends what was written so far on the connection with a round trip
// and waits for its answer (or until ctx ends or socket.timeout.ms passes).
// The broker handles the requests of a connection in order and closes the
// connection after a PRODUCE it could not append, so an answer proves that
// every earlier produce request on the connection was appended. The round
// trip is an OFFSETS request for (topic, partition), latest, one offset:
// the protocol is unchanged. Deviation: Kafka 0.7's sync producer returns
// once the request is written. With request.required.acks 1 or -1 on a
// replicated topic, the PRODUCE_ACKS answer takes this method's place
// (produceParts); on a 0.7 topic this round trip is the acknowledgement.
func (b *brokerConn) confirm(ctx context.Context, topic string, partition wire.Partition) error {
	b.mu.Lock()
	r, err := b.askLocked(topic, partition)
	b.mu.Unlock()
	if err != nil {
		return err
	}
	ok, why := r.wait(ctx, b.cfg.SocketTimeout)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.settleLocked(r, ok, why)
}

// confirmPending confirms what is unconfirmed on the connection, if
// anything: the async sender calls it when its queue runs empty, so that a
// connection that closes later leaves little unconfirmed. A failure is
// counted by the drop it causes.
func (b *brokerConn) confirmPending(ctx context.Context) {
	b.mu.Lock()
	if b.conn == nil || b.unconfirmed == 0 {
		b.mu.Unlock()
		return
	}
	r, err := b.askLocked(b.lastTopic, 0)
	b.mu.Unlock()
	if err != nil {
		return
	}
	ok, why := r.wait(ctx, b.cfg.SocketTimeout)
	b.mu.Lock()
	defer b.mu.Unlock()
	_ = b.settleLocked(r, ok, why)
}

// confirmLocked is confirm with b.mu held throughout.
func (b *brokerConn) confirmLocked(ctx context.Context, topic string, partition wire.Partition) error {
	r, err := b.askLocked(topic, partition)
	if err != nil {
		return err
	}
	ok, why := r.wait(ctx, b.cfg.SocketTimeout)
	return b.settleLocked(r, ok, why)
}

// roundTrip is one confirmation under way.
type roundTrip struct {
	answer  chan bool
	conn    *net.TCPConn // the connection it was sent on
	covered int          // unconfirmed messages written before it
}

// askLocked writes the round trip's OFFSETS request.
func (b *brokerConn) askLocked(topic string, partition wire.Partition) (roundTrip, error) {
	if b.conn != nil {
		select {
		case <-b.dead:
			b.dropLocked("connection closed by the broker")
		default:
		}
	}
	if b.conn == nil {
		return roundTrip{}, b.notConfirmed("it closed the connection before the round trip (it refused or could not append a request; see its log)")
	}
	if partition < 0 {
		partition = 0 // the broker picked one; any answer proves the order
	}
	var req [64 + wire.MaxTopicLen]byte
	frame := wire.AppendRequest(req[:0], &wire.Request{Type: wire.RequestOffsets,
		Offsets: &wire.OffsetsRequest{Topic: topic, Partition: partition, Time: wire.LatestTime, MaxOffsets: 1}})
	r := roundTrip{answer: b.answers.push(), conn: b.conn, covered: b.unconfirmed}
	nagle := !b.cfg.NoDelay && b.cfg.confirm() != ConfirmSend
	if nagle {
		// Setting TCP_NODELAY pushes out what Nagle's algorithm holds; the
		// request then leaves at once (see startLocked).
		if err := b.conn.SetNoDelay(true); err != nil {
			b.dropLocked("cannot set TCP_NODELAY")
			return roundTrip{}, b.notConfirmed("set TCP_NODELAY: " + err.Error())
		}
	}
	_, err := b.conn.Write(frame)
	if err == nil && nagle {
		err = b.conn.SetNoDelay(false)
	}
	if err != nil {
		b.dropLocked("write failed")
		return roundTrip{}, b.notConfirmed("write: " + err.Error())
	}
	return r, nil
}

// wait waits for the answer, at most timeout (0: no limit) or until ctx
// ends; why says what went wrong when ok is false.
func (r roundTrip) wait(ctx context.Context, timeout time.Duration) (ok bool, why string) {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case ok := <-r.answer:
		if ok {
			return true, ""
		}
		return false, "it closed the connection (it refused or could not append a request; see its log)"
	case <-expired:
		return false, fmt.Sprintf("no answer within socket.timeout.ms=%d", timeout.Milliseconds())
	case <-ctx.Done():
		return false, context.Cause(ctx).Error()
	}
}

// settleLocked records the outcome of a round trip: an answer confirms the
// messages written before it; otherwise the connection it went on is
// dropped (if still current), which counts what it leaves unconfirmed.
func (b *brokerConn) settleLocked(r roundTrip, ok bool, why string) error {
	if ok {
		if b.conn == r.conn {
			b.unconfirmed -= r.covered
		}
		return nil
	}
	if b.conn == r.conn {
		b.dropLocked("no confirmation: " + why)
	}
	return b.notConfirmed(why)
}

// notConfirmed is the error of a send the broker did not confirm.
func (b *brokerConn) notConfirmed(why string) error {
	return fmt.Errorf("%w by broker %d (%s): %s", ErrNotConfirmed, b.id, b.addr, why)
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
		c, err := dialTCP(ctx, b.cfg.Dial, remaining, b.addr)
		if err == nil {
			return b.startLocked(c)
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
	// A round trip after every send waits for its answer, which Nagle's
	// algorithm would hold back until the broker acknowledges the request
	// before it (a delayed ACK: up to 40 ms on Linux); so confirm=send
	// turns it off, as request-response clients do.
	if err := c.SetNoDelay(b.cfg.NoDelay || b.cfg.confirm() == ConfirmSend); err != nil {
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
	b.conn, b.raw, b.sent, b.connectedAt, b.deadline, b.retire = c, raw, 0, time.Now(), time.Time{}, false
	b.dead, b.watcherDone, b.answers = make(chan struct{}), make(chan struct{}), &waitQueue[bool]{}
	go watch(c, b.answers, b.dead, b.watcherDone)
	b.log.Info("producer: connected", "broker", b.id, "addr", b.addr)
	return nil
}

// maxAnswer bounds the answer to a round trip: an OFFSETS response with
// one offset.
const maxAnswer = 64

// watch reads a produce connection, on which the broker writes only the
// answers to round trips, and hands each to the oldest waiting round trip.
// It closes dead when the connection is closed, broken, or carries anything
// else (the peer is not speaking the protocol).
func watch(c *net.TCPConn, answers *waitQueue[bool], dead, done chan struct{}) {
	defer close(done)
	defer close(dead)
	defer answers.fail(false)
	r := bufio.NewReaderSize(c, maxAnswer)
	var buf [maxAnswer]byte
	for {
		if _, err := io.ReadFull(r, buf[:4]); err != nil {
			return
		}
		size := int(binary.BigEndian.Uint32(buf[:4]))
		if size < 2 || size > maxAnswer {
			return
		}
		if _, err := io.ReadFull(r, buf[:size]); err != nil {
			return
		}
		if !answers.answer(true) {
			return
		}
	}
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
	if b.unconfirmed > 0 {
		n := b.unconfirmed
		b.unconfirmed = 0
		b.lost(n, b.notConfirmed(fmt.Sprintf("%d messages written on a connection that closed (%s) before a round trip confirmed them", n, why)))
	}
	if err != nil {
		b.log.Warn("producer: close failed", "broker", b.id, "addr", b.addr, "err", err)
		return b.errorf("close: %w", err)
	}
	return nil
}

// close confirms what is unconfirmed on the connection, then drops it for
// good.
func (b *brokerConn) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.conn != nil && b.unconfirmed > 0 {
		_ = b.confirmLocked(context.Background(), b.lastTopic, 0) // a failure is counted by the drop
	}
	return b.dropLocked("producer closed")
}

// dialTCP opens a TCP connection to addr within timeout, through dial when
// it is set (Config.Dial).
func dialTCP(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), timeout time.Duration, addr string) (*net.TCPConn, error) {
	if dial == nil {
		d := net.Dialer{Timeout: timeout, KeepAlive: 15 * time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return c.(*net.TCPConn), nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil, errors.Join(fmt.Errorf("producer: Config.Dial returned a %T, not a *net.TCPConn", c), c.Close())
	}
	return tc, nil
}
