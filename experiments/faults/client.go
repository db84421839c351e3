package faults

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// conn is one client connection to a broker, speaking 0.7's framing
// directly: the harness needs to know exactly which request carried which
// message, which a client library's batching and retries would hide.
type conn struct {
	c       net.Conn
	timeout time.Duration
	buf     []byte
}

// dialer connects to a broker by address from the client host.
type dialer func(ctx context.Context, addr string) (net.Conn, error)

func newConn(ctx context.Context, dial dialer, addr string, timeout time.Duration) (*conn, error) {
	c, err := dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return &conn{c: c, timeout: timeout}, nil
}

func (c *conn) Close() error { return c.c.Close() }

// send writes one request frame.
func (c *conn) send(frame []byte) error {
	if err := c.c.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return err
	}
	_, err := c.c.Write(frame)
	return err
}

// recv reads one response: its error code and body.
func (c *conn) recv(max int) (wire.ErrorCode, []byte, error) {
	if err := c.c.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, nil, err
	}
	var hdr [wire.ResponseHeaderLen]byte
	if _, err := io.ReadFull(c.c, hdr[:]); err != nil {
		return 0, nil, err
	}
	size := int(binary.BigEndian.Uint32(hdr[:4]))
	if size < 2 || size-2 > max {
		return 0, nil, fmt.Errorf("faults: response of %d bytes (at most %d expected)", size, max+2)
	}
	code := wire.ErrorCode(int16(binary.BigEndian.Uint16(hdr[4:])))
	if cap(c.buf) < size-2 {
		c.buf = make([]byte, size-2)
	}
	body := c.buf[:size-2]
	if _, err := io.ReadFull(c.c, body); err != nil {
		return 0, nil, err
	}
	return code, body, nil
}

// produce sends a 0.7 PRODUCE (no response).
func (c *conn) produce(topic string, partition int32, set []byte) error {
	return c.send(wire.AppendRequest(nil, &wire.Request{Type: wire.RequestProduce,
		Produce: []wire.ProduceRequest{{Topic: topic, Partition: wire.Partition(partition), Messages: set}}}))
}

// latest asks for the partition's visible (flushed) end. Sent after
// PRODUCE requests on the same connection, its answer also means the broker
// has handled them: a broker reads and handles one connection's requests in
// order.
func (c *conn) latest(topic string, partition int32) (int64, error) {
	if err := c.send(wire.AppendRequest(nil, &wire.Request{Type: wire.RequestOffsets,
		Offsets: &wire.OffsetsRequest{Topic: topic, Partition: wire.Partition(partition), Time: wire.LatestTime, MaxOffsets: 1}})); err != nil {
		return 0, err
	}
	code, body, err := c.recv(1 << 10)
	if err != nil {
		return 0, err
	}
	if code != wire.CodeNone {
		return 0, fmt.Errorf("faults: offsets: %w", code.Err())
	}
	offs, err := wire.DecodeOffsetsResponse(body)
	if err != nil {
		return 0, err
	}
	if len(offs) == 0 {
		return 0, nil // a partition not created yet
	}
	return int64(offs[0]), nil
}

// fetched is one message of a fetch: its offset and payload.
type fetched struct {
	offset  int64
	payload []byte
}

// fetch reads what the broker shows of a partition from offset, up to max
// bytes, and returns the messages and the offset after the last one.
func (c *conn) fetch(topic string, partition int32, offset int64, max int) ([]fetched, int64, error) {
	if err := c.send(wire.AppendRequest(nil, &wire.Request{Type: wire.RequestFetch,
		Fetch: []wire.FetchRequest{{Topic: topic, Partition: wire.Partition(partition), Offset: wire.Offset(offset), MaxSize: int32(max)}}})); err != nil {
		return nil, offset, err
	}
	code, body, err := c.recv(max + 1<<10)
	if err != nil {
		return nil, offset, err
	}
	if code != wire.CodeNone {
		return nil, offset, &brokerError{code}
	}
	var out []fetched
	it := wire.NewIterator(body, wire.Offset(offset))
	for it.Next() {
		p := it.Message().Payload
		out = append(out, fetched{int64(it.Offset()), append([]byte(nil), p...)})
	}
	if err := it.Err(); err != nil {
		return out, int64(it.NextOffset()), fmt.Errorf("faults: fetch %s-%d at %d: %w", topic, partition, offset, err)
	}
	return out, int64(it.NextOffset()), nil
}

// brokerError is an error code in a response.
type brokerError struct{ code wire.ErrorCode }

func (e *brokerError) Error() string {
	return fmt.Sprintf("faults: broker error %d: %v", e.code, e.code.Err())
}

func isOutOfRange(err error) bool {
	var be *brokerError
	return errors.As(err, &be) && be.code == wire.CodeOffsetOutOfRange
}
