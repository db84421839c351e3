package server

import (
	"encoding/binary"
	"errors"

	"github.com/netdb11/kafka/broker/wire"
)

// maxMergedRequests bounds how many pipelined PRODUCE requests are appended
// together.
const maxMergedRequests = 256

// bufferedProduces returns the PRODUCE requests to first's partition that
// follow the current frame back to back and already sit, complete, in the
// read buffer; their bytes are marked consumed (discarded by release). It
// never reads from the socket. A following frame that is anything else,
// or malformed, stops the look-ahead and is handled on its own.
//
// A producer that sends one message per request (0.7's sync producer at
// batch size 1) pipelines many small PRODUCE requests, since they have no
// response; appending them together costs one write(2) instead of one each.
func (c *conn) bufferedProduces(first *wire.ProduceRequest) []wire.ProduceRequest {
	if first.Partition < 0 || len(first.Messages) == 0 {
		return nil
	}
	var more []wire.ProduceRequest
	pos := c.peeked // the current frame, when it was read in place
	for len(more) < maxMergedRequests {
		avail := c.br.Buffered()
		if avail-pos < 4 {
			break
		}
		b, err := c.br.Peek(avail) // all buffered: no read
		if err != nil {
			break
		}
		size := int(int32(binary.BigEndian.Uint32(b[pos:])))
		if size < 2 || size > avail-pos-4 {
			break
		}
		frame := b[pos+4 : pos+4+size]
		if wire.RequestType(binary.BigEndian.Uint16(frame)) != wire.RequestProduce {
			break
		}
		req, err := wire.DecodeRequest(frame)
		if err != nil {
			break
		}
		p := req.Produce[0]
		if p.Topic != first.Topic || p.Partition != first.Partition || len(p.Messages) == 0 {
			break
		}
		more = append(more, p)
		pos += 4 + size
	}
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
	err := c.produce([]wire.ProduceRequest{{Topic: first.Topic, Partition: first.Partition, Messages: merged}})
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
