package faults

import (
	"context"
	"errors"
	"fmt"
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
	resp    wire.ResponseReader
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
	return c.recvNoDeadline(max)
}

// recvNoDeadline is recv under a read deadline the caller has set; max
// bounds the body.
func (c *conn) recvNoDeadline(max int) (wire.ErrorCode, []byte, error) {
	return c.resp.ReadResponse(c.c, max+2)
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

// metadata asks for topic's partitions: leader, epoch, replicas and ISR
// (the replication layer's METADATA request).
func (c *conn) metadata(topic string) (*wire.TopicMetadata, error) {
	if err := c.send(wire.AppendMetadataRequest(nil, &wire.MetadataRequest{Topics: []string{topic}})); err != nil {
		return nil, err
	}
	code, body, err := c.recv(1 << 20)
	if err != nil {
		return nil, err
	}
	if code != wire.CodeNone {
		return nil, &brokerError{code}
	}
	md, err := wire.DecodeMetadataResponse(body)
	if err != nil {
		return nil, err
	}
	for i := range md.Topics {
		if md.Topics[i].Topic == topic {
			if md.Topics[i].Code != wire.CodeNone {
				return nil, &brokerError{md.Topics[i].Code}
			}
			return &md.Topics[i], nil
		}
	}
	return nil, fmt.Errorf("faults: metadata has no topic %s", topic)
}

// produceAcks appends set with acknowledgement level acks (1, -1) and
// returns the broker's code for it and the offset of its first message.
func (c *conn) produceAcks(acks int16, timeout time.Duration, topic string, partition int32, set []byte) (wire.ErrorCode, int64, error) {
	if err := c.send(wire.AppendProduceAcksRequest(nil, &wire.ProduceAcksRequest{Acks: acks, TimeoutMs: int32(timeout.Milliseconds()),
		Parts: []wire.ProduceRequest{{Topic: topic, Partition: wire.Partition(partition), Messages: set}}})); err != nil {
		return 0, 0, err
	}
	// The broker may hold the answer for the request's timeout.
	if err := c.c.SetReadDeadline(time.Now().Add(timeout + c.timeout)); err != nil {
		return 0, 0, err
	}
	code, body, err := c.recvNoDeadline(1 << 10)
	if err != nil {
		return 0, 0, err
	}
	rs, err := wire.DecodeProduceAcksResponse(body)
	if err != nil {
		return 0, 0, err
	}
	if len(rs) != 1 {
		return code, 0, fmt.Errorf("faults: produce answer with %d parts", len(rs))
	}
	return rs[0].Code, int64(rs[0].Offset), nil
}
