package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// FetchRequest names a partition, an offset and a size for MultiFetch:
// Topic, Partition, Offset and MaxSize (0: fetch.size).
type FetchRequest = wire.FetchRequest

// maxOffsets bounds the answer of an OFFSETS request a client may ask for.
const maxOffsets = 1 << 20

// SimpleConsumer talks to one broker over one connection (0.7's
// SimpleConsumer). It connects lazily, serves one request at a time (it is
// safe for concurrent use; callers take turns), and after a network error
// reconnects and retries the request once, as 0.7 does.
type SimpleConsumer struct {
	addr string
	cfg  Config
	log  *slog.Logger

	mu     sync.Mutex // guards every field below; held for a whole request
	conn   *net.TCPConn
	closed bool
	req    wire.Request // reused request
	fetch  [1]wire.FetchRequest
	out    []byte              // reused request frame
	resp   wire.ResponseReader // reused response: the MessageSets of the last request alias its buffer
	arena  arena               // reused expansion of compressed messages, likewise
}

// NewSimpleConsumer returns a consumer of the broker at addr (host:port).
// It does not connect until the first request.
func NewSimpleConsumer(addr string, cfg Config) (*SimpleConsumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("consumer: invalid config: %w", err)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("consumer: broker address %q: %w", addr, err)
	}
	c := &SimpleConsumer{addr: addr, cfg: cfg, log: cfg.Logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Addr returns the broker's address.
func (c *SimpleConsumer) Addr() string { return c.addr }

// Fetch asks for up to maxBytes (0: fetch.size) of the partition's log from
// offset. A broker error code is returned as a *BrokerError (for example
// errors.Is(err, wire.ErrOffsetOutOfRange)). An empty set means nothing new
// at that offset yet. The set is valid until the next request on c.
func (c *SimpleConsumer) Fetch(ctx context.Context, topic string, partition wire.Partition, offset wire.Offset, maxBytes int) (MessageSet, error) {
	req := FetchRequest{Topic: topic, Partition: partition, Offset: offset}
	if err := c.checkFetch(&req, maxBytes); err != nil {
		return MessageSet{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetch[0] = req
	c.req = wire.Request{Type: wire.RequestFetch, Fetch: c.fetch[:]}
	code, body, err := c.roundTripLocked(ctx, wire.ResponseHeaderLen+int(req.MaxSize))
	if err != nil {
		return MessageSet{}, fmt.Errorf("consumer: fetch %s-%d at offset %d: %w", topic, partition, offset, err)
	}
	set := MessageSet{Topic: topic, Partition: partition, Offset: offset, MaxBytes: int(req.MaxSize), Code: code, Bytes: body, arena: &c.arena}
	return set, set.Err()
}

// MultiFetch sends several fetches in one MULTIFETCH request and returns
// one set per request, in order. A broker error for one partition is in
// that set's Code and Err (its Iterator reports it); the sets are valid until
// the next request on c.
func (c *SimpleConsumer) MultiFetch(ctx context.Context, reqs ...FetchRequest) ([]MessageSet, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	if len(reqs) > math.MaxInt16 {
		return nil, fmt.Errorf("consumer: %d fetches; a MULTIFETCH holds at most %d", len(reqs), math.MaxInt16)
	}
	reqs = append([]FetchRequest(nil), reqs...)
	maxResp := wire.ResponseHeaderLen
	for i := range reqs {
		if err := c.checkFetch(&reqs[i], int(reqs[i].MaxSize)); err != nil {
			return nil, err
		}
		maxResp += 4 + 2 + int(reqs[i].MaxSize)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.req = wire.Request{Type: wire.RequestMultiFetch, Fetch: reqs}
	code, body, err := c.roundTripLocked(ctx, maxResp)
	if err == nil && code != wire.CodeNone {
		err = fmt.Errorf("broker answered %v: %w", code, code.Err())
	}
	var parts []wire.FetchResult
	if err == nil {
		if parts, err = wire.DecodeMultiFetchResponse(body); err != nil || len(parts) != len(reqs) {
			c.dropLocked("malformed response")
			err = fmt.Errorf("%w: %d parts for %d fetches (%v)", ErrProtocol, len(parts), len(reqs), err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("consumer: multifetch of %d partitions: %w", len(reqs), err)
	}
	sets := make([]MessageSet, len(reqs))
	for i, r := range reqs {
		if len(parts[i].Messages) > int(r.MaxSize) {
			c.dropLocked("malformed response")
			return nil, fmt.Errorf("consumer: multifetch: %w: %d bytes for %s-%d, asked for %d", ErrProtocol, len(parts[i].Messages), r.Topic, r.Partition, r.MaxSize)
		}
		sets[i] = MessageSet{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, MaxBytes: int(r.MaxSize),
			Code: parts[i].Code, Bytes: parts[i].Messages, arena: &c.arena}
	}
	return sets, nil
}

// checkFetch validates a fetch and fills in the default size.
func (c *SimpleConsumer) checkFetch(r *FetchRequest, maxBytes int) error {
	if maxBytes == 0 {
		maxBytes = c.cfg.FetchSize
	}
	switch {
	case wire.ValidateTopic(r.Topic) != nil:
		return fmt.Errorf("consumer: %w", wire.ValidateTopic(r.Topic))
	case maxBytes < 0 || maxBytes > maxFetchSize:
		return fmt.Errorf("consumer: fetch size %d is not in 1..%d", maxBytes, maxFetchSize)
	case r.Offset < 0:
		return fmt.Errorf("consumer: negative offset %d", r.Offset)
	}
	r.MaxSize = int32(maxBytes)
	return nil
}

// OffsetsBefore returns up to maxNum offsets at which the partition's
// segments start, for segments last modified before t (Unix milliseconds),
// newest first; wire.LatestTime (-1) gives the log end, wire.EarliestTime
// (-2) the earliest offset still held.
func (c *SimpleConsumer) OffsetsBefore(ctx context.Context, topic string, partition wire.Partition, t int64, maxNum int) ([]wire.Offset, error) {
	if maxNum < 1 || maxNum > maxOffsets {
		return nil, fmt.Errorf("consumer: maxNum %d is not in 1..%d", maxNum, maxOffsets)
	}
	if err := wire.ValidateTopic(topic); err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.req = wire.Request{Type: wire.RequestOffsets, Offsets: &wire.OffsetsRequest{Topic: topic, Partition: partition, Time: t, MaxOffsets: int32(maxNum)}}
	code, body, err := c.roundTripLocked(ctx, wire.ResponseHeaderLen+4+8*maxNum)
	if err == nil && code != wire.CodeNone {
		err = &BrokerError{Topic: topic, Partition: partition, Offset: wire.Offset(t), Code: code}
	}
	var offsets []wire.Offset
	if err == nil {
		if offsets, err = wire.DecodeOffsetsResponse(body); err != nil {
			c.dropLocked("malformed response")
			err = fmt.Errorf("%w: %v", ErrProtocol, err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("consumer: offsets of %s-%d before %d: %w", topic, partition, t, err)
	}
	return offsets, nil
}

// roundTripLocked sends c.req and reads the response, whose size must not
// exceed maxResp; it reconnects and retries once after a network error. The
// body aliases c.resp's buffer.
func (c *SimpleConsumer) roundTripLocked(ctx context.Context, maxResp int) (wire.ErrorCode, []byte, error) {
	if c.closed {
		return 0, nil, ErrClosed
	}
	c.out = wire.AppendRequest(c.out[:0], &c.req)
	return c.sendLocked(ctx, maxResp)
}

// sendLocked sends the request frame in c.out and reads the response, as
// roundTripLocked.
func (c *SimpleConsumer) sendLocked(ctx context.Context, maxResp int) (wire.ErrorCode, []byte, error) {
	c.arena.reset() // the last request's sets, and what they expanded to, are no longer valid
	for attempt := 0; ; attempt++ {
		code, body, err := c.tryLocked(ctx, maxResp)
		if err == nil || attempt > 0 || ctx.Err() != nil || errors.Is(err, ErrProtocol) {
			return code, body, err
		}
		// Info: the caller gets the error if the retry fails too, and a
		// caller retrying while a broker is down would log it every time.
		c.log.Info("consumer: request failed, reconnecting and retrying once", "addr", c.addr, "err", err)
	}
}

func (c *SimpleConsumer) tryLocked(ctx context.Context, maxResp int) (wire.ErrorCode, []byte, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	var deadline time.Time
	if c.cfg.SocketTimeout > 0 {
		deadline = time.Now().Add(c.cfg.SocketTimeout)
	}
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	if c.conn == nil {
		if err := c.connectLocked(ctx, deadline); err != nil {
			return 0, nil, err
		}
	}
	conn := c.conn
	if err := conn.SetDeadline(deadline); err != nil {
		c.dropLocked("cannot set a deadline")
		return 0, nil, err
	}
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	}
	code, body, err := c.exchangeLocked(maxResp)
	if stop != nil && !stop() {
		c.dropLocked("context ended during a request")
		return 0, nil, context.Cause(ctx)
	}
	if err != nil {
		c.dropLocked("request failed")
	}
	return code, body, err
}

// exchangeLocked writes the request frame in c.out and reads its response
// (the one request in flight on c.conn), under the deadline tryLocked set;
// maxResp bounds the whole frame, size field included.
func (c *SimpleConsumer) exchangeLocked(maxResp int) (wire.ErrorCode, []byte, error) {
	code, body, err := c.resp.Exchange(c.conn, c.out, maxResp-wire.SizeLen)
	if errors.Is(err, wire.ErrMalformedResponse) {
		err = fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	return code, body, err
}

func (c *SimpleConsumer) connectLocked(ctx context.Context, deadline time.Time) error {
	var conn net.Conn
	var err error
	if c.cfg.Dial != nil {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		conn, err = c.cfg.Dial(dctx, "tcp", c.addr)
		cancel()
	} else {
		d := net.Dialer{Deadline: deadline, KeepAlive: 15 * time.Second}
		conn, err = d.DialContext(ctx, "tcp", c.addr)
	}
	if err != nil {
		return err
	}
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return errors.Join(fmt.Errorf("consumer: Config.Dial returned a %T, not a *net.TCPConn", conn), conn.Close())
	}
	if c.cfg.BufferSize > 0 {
		if err := tc.SetReadBuffer(c.cfg.BufferSize); err != nil {
			return errors.Join(fmt.Errorf("set receive buffer: %w", err), tc.Close())
		}
	}
	c.conn = tc
	c.log.Info("consumer: connected", "addr", c.addr)
	return nil
}

// dropLocked closes the connection; the next request reconnects. A close
// error is logged: the caller reports the failure that made it drop.
func (c *SimpleConsumer) dropLocked(why string) {
	if c.conn == nil {
		return
	}
	if err := c.conn.Close(); err != nil {
		c.log.Warn("consumer: close failed", "addr", c.addr, "err", err)
	}
	c.conn = nil
	c.log.Info("consumer: disconnected", "addr", c.addr, "why", why)
}

// Close closes the connection; later requests fail with ErrClosed.
func (c *SimpleConsumer) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	if err != nil {
		return fmt.Errorf("consumer: close %s: %w", c.addr, err)
	}
	return nil
}
