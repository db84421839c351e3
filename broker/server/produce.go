package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

// maxMergedRequests bounds how many pipelined PRODUCE requests are appended
// together with the one being handled.
const maxMergedRequests = 256

// sizeFieldLen is the width of an int32 size field: a frame's size prefix,
// a PRODUCE body's message set size.
const sizeFieldLen = 4

// clientError is a request the broker refuses by closing the connection
// (the protocol has no response for it).
type clientError struct{ err error }

func (e *clientError) Error() string { return e.err.Error() }
func (e *clientError) Unwrap() error { return e.err }

// pipelinedProduces returns the message sets of the PRODUCE requests that
// sit complete and back to back at the start of buf, appended to dst, and
// how many bytes of buf they take. head is the current PRODUCE frame's
// bytes before its set size (type, topic, partition): a following frame
// matches when its bytes before the set size are head, byte for byte, and
// its set size is exactly what remains of it and not zero, which is what
// decoding it would check; so followers cost no decoding. The look-ahead
// stops at the first frame that does not match (anything else, or a
// malformed frame, handled on its own next), at an incomplete frame, or
// after limit sets.
//
// A producer that sends one message per request (0.7's sync producer at
// batch size 1) pipelines many small PRODUCE requests, since they have no
// response; appending them together costs one write(2) instead of one each.
func pipelinedProduces(dst [][]byte, head, buf []byte, limit int) (sets [][]byte, n int) {
	for added := 0; added < limit && len(buf)-n >= sizeFieldLen; added++ {
		size := int(int32(binary.BigEndian.Uint32(buf[n:])))
		if size < 0 || size > len(buf)-n-sizeFieldLen {
			break
		}
		next := buf[n+sizeFieldLen : n+sizeFieldLen+size]
		if size <= len(head)+sizeFieldLen || !bytes.Equal(next[:len(head)], head) ||
			int(int32(binary.BigEndian.Uint32(next[len(head):]))) != size-len(head)-sizeFieldLen {
			break
		}
		dst = append(dst, next[len(head)+sizeFieldLen:])
		n += sizeFieldLen + size
	}
	return dst, n
}

// checked is a produce request that passed every check: its partition is
// resolved and its messages are valid.
type checked struct {
	topic     string
	partition wire.Partition
	log       *log.Log // nil: the partition does not exist yet
	set       []byte
	count     int // messages in set
}

// produce handles a PRODUCE or MULTIPRODUCE request, which have no
// response, in one step:
//
//  1. for a PRODUCE (or a MULTIPRODUCE of one part), take the requests of
//     the same type to the same topic and partition pipelined behind it
//     (pipelinedProduces): they are handled here, each as its own request;
//  2. check each request once: its topic name, its partition (-1 is
//     replaced by a partition the broker picks, one pick per request, as
//     Kafka 0.7's ProducerRequest.getTranslatedPartition; others must be in
//     the topic's range) and its messages (size, magic, CRC,
//     max.message.size), and the Extension's ProduceAllowed if there is
//     one;
//  3. append, with one Append per run of consecutive requests to one
//     partition, creating the partition first if it does not exist.
//
// A refused request closes the connection (a *clientError). The pipelined
// requests before it are appended, as if each were handled alone; the parts
// of a MULTIPRODUCE of several parts are one request, so none is appended.
//
// Deviation: Kafka 0.7 appends the parts of a MULTIPRODUCE one by one and,
// when one fails, closes the connection with the earlier parts appended and
// the later ones dropped; the client cannot tell which. Here every part is
// checked before any is appended, and a partition is created only for a
// request that passed its checks, so a request the broker refuses appends
// nothing and creates nothing. Only an I/O error in the middle can still
// leave earlier parts appended.
//
// Deviation: Kafka 0.7 appends each pipelined request separately; here a
// run of them to one partition shares one Append. The log holds the same bytes at the same offsets,
// only the choice of where a segment is rolled may differ by the size of
// the merged requests.
func (c *conn) produce(frame []byte, req *wire.Request) error {
	reqs := append(c.reqs[:0], req.Produce...)
	// A PRODUCE, or a MULTIPRODUCE of one part (0.7's async producer sends
	// every batch as a MULTIPRODUCE: at batch.size 1, one per message), is
	// one request whose frame ends with its set; the requests of the same
	// shape pipelined behind it are taken with it.
	single := req.Type == wire.RequestProduce || len(reqs) == 1
	if single && len(reqs[0].Messages) > 0 {
		head := frame[:len(frame)-len(reqs[0].Messages)-sizeFieldLen]
		sets, n := pipelinedProduces(c.sets[:0], head, c.in.buffered()[c.peeked:], maxMergedRequests)
		c.peeked += n
		for _, set := range sets {
			reqs = append(reqs, wire.ProduceRequest{Topic: reqs[0].Topic, Partition: reqs[0].Partition, Messages: set})
		}
		c.sets = sets
	}
	c.reqs = reqs
	if single {
		c.handled = len(reqs)
	}

	multi := !single // parts of one request: describe names the part
	good := c.checked[:0]
	var refused error
	partitions, topic := 0, ""
	for i := range reqs {
		r := &reqs[i]
		if i == 0 || r.Topic != topic {
			if err := wire.ValidateTopic(r.Topic); err != nil {
				refused = &clientError{c.describe(multi, i, r.Topic, r.Partition, err)}
				break
			}
			topic, partitions = r.Topic, 0
		}
		ck, err := c.check(r, &partitions)
		if err != nil {
			refused = &clientError{c.describe(multi, i, r.Topic, ck.partition, err)}
			break
		}
		good = append(good, ck)
	}
	c.checked = good
	if refused != nil && !single {
		return refused
	}
	for i := 0; i < len(good); {
		j := i + 1
		for j < len(good) && good[j].topic == good[i].topic && good[j].partition == good[i].partition {
			j++
		}
		if err := c.appendRun(good[i:j]); err != nil {
			return err
		}
		i = j
	}
	return refused
}

// check resolves a produce request's partition and validates its messages.
// partitions caches the topic's partition count (0: not read yet).
func (c *conn) check(r *wire.ProduceRequest, partitions *int) (checked, error) {
	logs := c.s.cfg.Logs
	ck := checked{topic: r.Topic, partition: r.Partition, set: r.Messages}
	if ck.partition == -1 {
		if *partitions == 0 {
			*partitions = logs.Partitions(r.Topic)
		}
		ck.partition = wire.Partition(c.s.cfg.ChoosePartition(*partitions))
	}
	l, err := logs.Get(r.Topic, ck.partition)
	switch {
	case err == nil:
		ck.log = l
	case errors.Is(err, log.ErrClosed):
		return ck, err
	default:
		if *partitions == 0 {
			*partitions = logs.Partitions(r.Topic)
		}
		if ck.partition < 0 || int(ck.partition) >= *partitions {
			return ck, fmt.Errorf("%w (the topic has partitions 0 to %d)", wire.ErrWrongPartition, *partitions-1)
		}
	}
	if ck.count, err = wire.Validate(r.Messages, logs.MaxMessageSize()); err != nil {
		return ck, err
	}
	if x := c.s.cfg.Extension; x != nil {
		err = x.ProduceAllowed(r.Topic, ck.partition)
	}
	return ck, err
}

// describe names the request an error is about.
func (c *conn) describe(multi bool, i int, topic string, partition wire.Partition, err error) error {
	if multi {
		return fmt.Errorf("produce part %d to %s-%d: %w", i, topic, partition, err)
	}
	return fmt.Errorf("produce to %s-%d: %w", topic, partition, err)
}

// appendRun appends checked requests to one partition, which it creates if
// need be, with one Append.
func (c *conn) appendRun(run []checked) error {
	first := run[0]
	l := first.log
	if l == nil {
		var err error
		if l, err = c.s.cfg.Logs.GetOrCreate(first.topic, first.partition); err != nil {
			return fmt.Errorf("produce to %s-%d: %w", first.topic, first.partition, err)
		}
	}
	set, count := first.set, first.count
	if len(run) > 1 {
		merged := c.merged[:0]
		count = 0
		for _, ck := range run {
			merged = append(merged, ck.set...)
			count += ck.count
		}
		c.merged = merged
		set = merged
		c.s.merged.Add(int64(len(run) - 1))
	}
	if len(set) == 0 {
		return nil
	}
	if _, err := l.AppendValidated(set, count); err != nil {
		return fmt.Errorf("produce to %s-%d: %w", first.topic, first.partition, err)
	}
	if x := c.s.cfg.Extension; x != nil {
		x.Produced(first.topic, first.partition)
	}
	if o := c.s.cfg.Observer; o != nil {
		o.Produced(first.topic, first.partition, count, len(set))
	}
	return nil
}
