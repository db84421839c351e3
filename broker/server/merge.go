package server

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/netdb11/kafka/broker/wire"
)

// maxMergedRequests bounds how many pipelined PRODUCE requests are appended
// together.
const maxMergedRequests = 256

// sizeFieldLen is the width of an int32 size field: a frame's size prefix,
// a PRODUCE body's message set size.
const sizeFieldLen = 4

// bufferedProduces returns the PRODUCE requests to first's partition that
// follow frame, the current request, back to back and already sit,
// complete, in the read buffer; their bytes are marked consumed (discarded
// by release). It never reads from the socket. A following frame that is
// anything else, or malformed, stops the look-ahead and is handled on its
// own.
//
// A follower matches when its type, topic and partition are byte for byte
// those of frame and its set size is exactly what remains of it, which is
// what decoding it would check; so followers cost no decoding. When frame
// asked for partition -1 (random is true; first.Partition is then the
// partition picked for it), each follower asking for -1 gets its own pick
// here, and joins only if that pick is first's partition; otherwise the
// look-ahead stops and the pick is kept for that follower, which is handled
// next (handleFrame uses the pick), so each request is still placed by one
// independent pick, as when each is handled alone.
//
// A producer that sends one message per request (0.7's sync producer at
// batch size 1) pipelines many small PRODUCE requests, since they have no
// response; appending them together costs one write(2) instead of one each.
func (c *conn) bufferedProduces(frame []byte, first *wire.ProduceRequest, random bool) []wire.ProduceRequest {
	if first.Partition < 0 || len(first.Messages) == 0 {
		return nil
	}
	// The frame's bytes before its set size: type, topic, partition.
	head := frame[:len(frame)-len(first.Messages)-sizeFieldLen]
	b := c.in.buffered() // no read: only what is already here
	avail := len(b)
	pos := c.peeked // the current frame, when it was read in place
	partitions := 0
	more := c.more[:0]
	for len(more) < maxMergedRequests && avail-pos >= sizeFieldLen {
		size := int(int32(binary.BigEndian.Uint32(b[pos:])))
		if size < 0 || size > avail-pos-sizeFieldLen {
			break
		}
		next := b[pos+sizeFieldLen : pos+sizeFieldLen+size]
		if size <= len(head)+sizeFieldLen || !bytes.Equal(next[:len(head)], head) ||
			int(int32(binary.BigEndian.Uint32(next[len(head):]))) != size-len(head)-sizeFieldLen {
			break
		}
		if random {
			if partitions == 0 {
				partitions = c.s.cfg.Logs.Partitions(first.Topic)
			}
			if p := int32(c.s.cfg.ChoosePartition(partitions)); p != first.Partition {
				c.picked, c.hasPicked = p, true
				break
			}
		}
		more = append(more, wire.ProduceRequest{Topic: first.Topic, Partition: first.Partition,
			Messages: next[len(head)+sizeFieldLen:]})
		pos += sizeFieldLen + size
	}
	c.more = more
	if len(more) > 0 {
		c.peeked = pos
	}
	return more
}

// produceMerged appends first and more, PRODUCE requests to one partition
// received back to back, with one Append. If the merged set is refused
// (some request carries a bad message), they are appended one by one
// instead, so that exactly the requests before the bad one are appended and
// the bad one closes the connection, as when each is handled alone.
//
// Deviation: Kafka 0.7 appends each request separately. The log holds the
// same bytes at the same offsets; only the choice of where a segment is
// rolled may differ by the size of the merged requests.
func (c *conn) produceMerged(first wire.ProduceRequest, more []wire.ProduceRequest) error {
	merged := append(c.merged[:0], first.Messages...)
	for _, p := range more {
		merged = append(merged, p.Messages...)
	}
	c.merged = merged
	c.s.merged.Add(int64(len(more)))
	c.one[0] = wire.ProduceRequest{Topic: first.Topic, Partition: first.Partition, Messages: merged}
	err := c.produce(c.one[:])
	var ce *clientError
	if !errors.As(err, &ce) {
		return err
	}
	if err := c.produce([]wire.ProduceRequest{first}); err != nil {
		return err
	}
	for i := range more {
		if err := c.produce(more[i : i+1]); err != nil {
			return err
		}
	}
	return nil
}
