package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

// lookup finds the log a FETCH or OFFSETS request names. It returns a nil
// log and CodeNone for a partition of a topic this broker does not hold yet
// but could (Kafka 0.7 answers those with an empty result); CodeWrongPartition
// for a partition outside the topic's range; CodeUnknown for a topic name
// Kafka refuses (checked first, so it never reaches the disk).
func (c *conn) lookup(topic string, partition wire.Partition) (*log.Log, wire.ErrorCode) {
	if err := wire.ValidateTopic(topic); err != nil {
		c.s.log.Info("request for an invalid topic", "remote", c.remote, "err", err)
		return nil, wire.CodeUnknown
	}
	logs := c.s.cfg.Logs
	l, err := logs.Get(topic, partition)
	switch {
	case err == nil:
		return l, wire.CodeNone
	case errors.Is(err, wire.ErrWrongPartition):
		if partition >= 0 && int(partition) < logs.Partitions(topic) {
			return nil, wire.CodeNone
		}
		c.s.log.Info("request for a wrong partition", "remote", c.remote, "topic", topic, "partition", partition)
		return nil, wire.CodeWrongPartition
	default:
		c.s.log.Error("looking up a log", "topic", topic, "partition", partition, "err", err)
		return nil, wire.CodeOf(err)
	}
}

// part is the answer to one FETCH: an error code and a region to send.
type part struct {
	code   wire.ErrorCode
	region log.Region
}

// read runs one FETCH against the logs. A negative maxSize is answered with
// InvalidFetchSize.
//
// Deviation: Kafka 0.7 does not check maxSize and builds a negative-sized
// response from a negative one; InvalidFetchSize is the code it has for
// fetch sizes.
func (c *conn) read(f wire.FetchRequest) part {
	if f.MaxSize < 0 {
		return part{code: wire.CodeInvalidFetchSize}
	}
	l, code := c.lookup(f.Topic, f.Partition)
	if l == nil {
		return part{code: code}
	}
	var region log.Region
	var err error
	if limit, ok := c.fetchLimit(f.Topic, f.Partition); ok {
		region, err = l.ReadTo(wire.Offset(f.Offset), int(f.MaxSize), limit)
	} else {
		region, err = l.Read(wire.Offset(f.Offset), int(f.MaxSize))
	}
	if err != nil {
		code := wire.CodeOf(err)
		if code == wire.CodeUnknown {
			c.s.log.Error("fetch failed", "topic", f.Topic, "partition", f.Partition, "offset", f.Offset, "err", err)
		} else {
			c.s.log.Debug("fetch refused", "remote", c.remote, "code", code, "err", err)
		}
		return part{code: code}
	}
	return part{region: region}
}

// offsetsLimit asks the extension, if any, whether an OFFSETS request may be
// answered here and for a bound on its offsets.
func (c *conn) offsetsLimit(topic string, partition wire.Partition) (wire.Offset, bool, error) {
	if x := c.s.cfg.Extension; x != nil {
		return x.OffsetsLimit(topic, partition)
	}
	return 0, false, nil
}

// boundOffsets bounds an OFFSETS answer (newest first) at limit: the offsets
// above it give way to limit itself (0.8's handleOffsetRequest), so that a
// consumer starting at "latest" starts at the high watermark, never inside
// bytes a failover may discard.
func boundOffsets(offsets []wire.Offset, limit wire.Offset) []wire.Offset {
	i := 0
	for i < len(offsets) && offsets[i] > limit {
		i++
	}
	if i == 0 {
		return offsets
	}
	return append([]wire.Offset{limit}, offsets[i:]...)
}

// fetchLimit asks the extension, if any, for a bound on what fetches see.
func (c *conn) fetchLimit(topic string, partition wire.Partition) (wire.Offset, bool) {
	if x := c.s.cfg.Extension; x != nil {
		return x.FetchLimit(topic, partition)
	}
	return 0, false
}

// fetch answers a FETCH: size | error | message set bytes, the bytes sent
// from the segment file with sendfile.
func (c *conn) fetch(f wire.FetchRequest) error {
	p := c.read(f)
	defer p.region.Release()
	// The response's size field (2 + bytes) must fit an int32.
	p.region.Len = min(p.region.Len, math.MaxInt32-2)
	if o := c.s.cfg.Observer; o != nil && p.region.Len > 0 {
		o.Fetched(f.Topic, f.Partition, p.region.Len)
	}
	c.out.hdr = wire.AppendResponseHeader(c.out.hdr, p.code, int(p.region.Len))
	if err := c.out.region(p.region.File, p.region.Pos, p.region.Len); err != nil {
		return err
	}
	return c.out.flush()
}

// multiFetch answers a MULTIFETCH, laid out as Kafka 0.7's
// MultiMessageSetSend: size | error 0 | then per fetch, in request order,
// size | error | bytes.
//
// All regions are read first, as the total size goes first. The total must
// fit the int32 size field, so the regions are clipped (from the last part
// to get bytes) to keep it at most 2^31-1; a region may end mid-message
// anyway, so the client just fetches the rest again.
func (c *conn) multiFetch(fs []wire.FetchRequest) error {
	parts := make([]part, len(fs))
	defer func() {
		for _, p := range parts {
			p.region.Release()
		}
	}()
	budget := int64(math.MaxInt32) - 2 - int64(wire.ResponseHeaderLen*len(fs))
	total := 0
	for i, f := range fs {
		parts[i] = c.read(f)
		r := &parts[i].region
		r.Len = min(r.Len, budget)
		budget -= r.Len
		total += wire.ResponseHeaderLen + int(r.Len)
	}
	if o := c.s.cfg.Observer; o != nil {
		for i, p := range parts {
			if p.region.Len > 0 {
				o.Fetched(fs[i].Topic, fs[i].Partition, p.region.Len)
			}
		}
	}
	c.out.hdr = wire.AppendResponseHeader(c.out.hdr, wire.CodeNone, total)
	for _, p := range parts {
		c.out.hdr = wire.AppendResponseHeader(c.out.hdr, p.code, int(p.region.Len))
		if err := c.out.region(p.region.File, p.region.Pos, p.region.Len); err != nil {
			return err
		}
	}
	return c.out.flush()
}

// offsets answers an OFFSETS request: size | error | count | offsets.
// A negative maxNumOffsets closes the connection (Kafka 0.7 fails with
// NegativeArraySizeException and closes it).
//
// Deviation: Kafka 0.7 closes the connection for a wrong partition; here the
// answer is WrongPartition (or Unknown for an invalid topic name) with an
// empty offset list, so that even a client ignoring the code reads a
// well-formed empty answer.
func (c *conn) offsets(o *wire.OffsetsRequest) error {
	if o.MaxOffsets < 0 {
		return &clientError{fmt.Errorf("offsets request for %s-%d asks for %d offsets", o.Topic, o.Partition, o.MaxOffsets)}
	}
	limit, bounded, err := c.offsetsLimit(o.Topic, o.Partition)
	if err != nil {
		c.out.hdr = wire.AppendResponseHeader(c.out.hdr, wire.CodeOf(err), 4)
		c.out.hdr = binary.BigEndian.AppendUint32(c.out.hdr, 0)
		return c.out.flush()
	}
	l, code := c.lookup(o.Topic, o.Partition)
	var offsets []wire.Offset
	switch {
	case l != nil:
		for _, off := range l.OffsetsBefore(o.Time, int(o.MaxOffsets)) {
			offsets = append(offsets, off)
		}
	case code == wire.CodeNone && (o.Time == wire.LatestTime || o.Time == wire.EarliestTime):
		// Kafka 0.7's Log.getEmptyOffsets: a partition not created yet
		// starts and ends at 0.
		offsets = []wire.Offset{0}
	}
	if bounded {
		offsets = boundOffsets(offsets, limit)
	}
	if code != wire.CodeNone {
		c.out.hdr = wire.AppendResponseHeader(c.out.hdr, code, 4)
		c.out.hdr = binary.BigEndian.AppendUint32(c.out.hdr, 0)
	} else {
		c.out.hdr = wire.AppendOffsetsResponse(c.out.hdr, offsets)
	}
	return c.out.flush()
}
