package producer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// asyncSender is the queue and send goroutine of one broker in async mode
// (0.7's AsyncProducer and ProducerSendThread). Messages are encoded as they
// are queued, straight into batches grouped by (topic, partition); a batch
// is sealed when it holds batch.size messages, and the goroutine sends the
// sealed batches, each as its own MULTIPRODUCE, or the open one when
// queue.time has passed since its last send. Batches are recycled, so the
// steady state allocates nothing.
//
// The requests of the batches queued when the goroutine looks are written
// with one write(2) (a run, sendRun), each still its own request on the
// wire: with batch.size 1 a request per message, as 0.7, but not a system
// call per message. Deviation: 0.7's ProducerSendThread writes each request
// with its own write; the bytes on the wire are the same.
type asyncSender struct {
	p  *Producer
	id wire.BrokerID
	// conn is the 0.7 connection of the broker; nil for the sender of a
	// leader of replicated topics, whose batches go out as PRODUCE_ACKS
	// (sendAcked).
	conn *brokerConn
	wake chan struct{} // capacity 1: something to send, or closing
	done chan struct{} // closed when run returns

	mu      sync.Mutex // guards every field below
	open    *batch     // the batch being filled
	sealed  []*batch   // full batches, oldest first, from sealed[head]
	head    int        // sealed[:head] are taken (nil)
	free    []*batch   // recycled batches
	queued  int        // messages in open and sealed: at most queue.size
	closing bool
	space   chan struct{} // closed when room frees up; nil when nobody waits
}

// batch is a set of messages for one broker, grouped by (topic, partition).
type batch struct {
	parts []batchPart // parts[len:cap] keep their buffers for reuse
	n     int         // messages in all parts
}

// batchPart holds the encoded, uncompressed messages of one partition.
type batchPart struct {
	topic     string
	partition wire.Partition
	set       []byte
	n         int
}

// add appends one message to the part of (topic, partition).
func (b *batch) add(topic string, partition wire.Partition, value []byte) {
	var part *batchPart
	for i := len(b.parts) - 1; i >= 0; i-- {
		if b.parts[i].partition == partition && b.parts[i].topic == topic {
			part = &b.parts[i]
			break
		}
	}
	if part == nil {
		if len(b.parts) < cap(b.parts) {
			b.parts = b.parts[:len(b.parts)+1]
		} else {
			b.parts = append(b.parts, batchPart{})
		}
		part = &b.parts[len(b.parts)-1]
		part.topic, part.partition, part.set, part.n = topic, partition, part.set[:0], 0
	}
	part.set = wire.AppendMessage(part.set, value)
	part.n++
	b.n++
}

func (b *batch) reset() {
	b.parts = b.parts[:0]
	b.n = 0
}

func newAsyncSender(p *Producer, id wire.BrokerID, conn *brokerConn) *asyncSender {
	s := &asyncSender{p: p, id: id, conn: conn, wake: make(chan struct{}, 1), done: make(chan struct{}), open: &batch{}}
	go s.run()
	return s
}

func (s *asyncSender) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// enqueue queues one message, waiting for room as queue.enqueueTimeout.ms
// says.
func (s *asyncSender) enqueue(ctx context.Context, topic string, partition wire.Partition, value []byte) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	s.mu.Lock()
	for s.queued >= s.p.cfg.QueueSize {
		if s.closing {
			s.mu.Unlock()
			return ErrClosed
		}
		wait := s.p.cfg.EnqueueTimeout
		if wait == 0 {
			s.mu.Unlock()
			return ErrQueueFull
		}
		if s.space == nil {
			s.space = make(chan struct{})
		}
		space := s.space
		s.mu.Unlock()
		var expired <-chan time.Time
		if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			}
			expired = timer.C
		}
		select {
		case <-space:
		case <-expired:
			return ErrQueueFull
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		s.mu.Lock()
	}
	if s.closing {
		s.mu.Unlock()
		return ErrClosed
	}
	s.open.add(topic, partition, value)
	s.queued++
	if s.open.n >= s.p.cfg.BatchSize {
		s.sealLocked()
		s.mu.Unlock()
		s.signal()
		return nil
	}
	s.mu.Unlock()
	return nil
}

// sealLocked moves the open batch to the sealed queue.
func (s *asyncSender) sealLocked() {
	if s.head > 0 && len(s.sealed) == cap(s.sealed) {
		// Reuse the taken front instead of growing.
		n := copy(s.sealed, s.sealed[s.head:])
		clear(s.sealed[n:])
		s.sealed, s.head = s.sealed[:n], 0
	}
	s.sealed = append(s.sealed, s.open)
	if n := len(s.free); n > 0 {
		s.open, s.free = s.free[n-1], s.free[:n-1]
	} else {
		s.open = &batch{}
	}
}

// maxRunBytes bounds the message bytes of the batches one run takes (and
// writes with one write(2)): a run of batch.size 1 holds about a thousand
// 200-byte messages.
const maxRunBytes = 256 << 10

// take appends to run the next batches to send, oldest first: at least one
// sealed batch and more while the run holds under maxRunBytes of messages
// (only one when one is set), or the open batch when flush is set and none
// is sealed. It returns run, empty when there is nothing to send, and
// whether the sender is closing. Taken batches leave the queue (queued).
func (s *asyncSender) take(run []*batch, flush, one bool) ([]*batch, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if (flush || s.closing) && len(s.sealed) == s.head && s.open.n > 0 {
		s.sealLocked()
	}
	size := 0
	for s.head < len(s.sealed) && (len(run) == 0 || (!one && size < maxRunBytes)) {
		b := s.sealed[s.head]
		s.sealed[s.head] = nil
		s.head++
		s.queued -= b.n
		size += b.bytes()
		run = append(run, b)
	}
	if s.head == len(s.sealed) {
		s.sealed, s.head = s.sealed[:0], 0
	}
	if len(run) > 0 && s.space != nil {
		close(s.space)
		s.space = nil
	}
	return run, s.closing
}

// bytes is the size of the batch's encoded messages.
func (b *batch) bytes() int {
	n := 0
	for i := range b.parts {
		n += len(b.parts[i].set)
	}
	return n
}

func (s *asyncSender) recycle(b *batch) {
	b.reset()
	s.mu.Lock()
	s.free = append(s.free, b)
	s.mu.Unlock()
}

// run is the send goroutine: it sends the batches sealed, and the open
// batch when queue.time has passed since the last send (0.7's
// ProducerSendThread); on close it sends everything left and returns.
func (s *asyncSender) run() {
	defer close(s.done)
	queueTime := s.p.cfg.QueueTime
	lastSend := time.Now()
	timer := time.NewTimer(queueTime)
	defer timer.Stop()
	f := &frameBuf{}
	// A run is written with one write only on a 0.7 connection without a
	// round trip per batch; otherwise each batch goes on its own.
	one := s.conn == nil || s.p.cfg.confirm() == ConfirmSend
	var run []*batch
	for {
		expired := false
		select {
		case <-s.wake:
		case <-timer.C:
			expired = true
		}
		if !expired {
			expired = time.Since(lastSend) >= queueTime
		}
		for {
			var closing bool
			run, closing = s.take(run[:0], expired, one)
			if len(run) == 0 {
				if closing {
					return
				}
				// Idle: confirm what was sent (confirm=close), so that a
				// connection that closes later leaves little unconfirmed.
				if s.conn != nil {
					s.conn.confirmPending(context.Background())
				}
				break
			}
			if one {
				s.send(f, run[0])
			} else {
				s.sendRun(f, run)
			}
			for i, b := range run {
				s.recycle(b)
				run[i] = nil
			}
			lastSend, expired = time.Now(), false
		}
		timer.Reset(max(0, queueTime-time.Since(lastSend)))
	}
}

// send writes one batch as a MULTIPRODUCE (0.7's DefaultEventHandler always
// uses multiSend); a failure is reported and the batch dropped.
func (s *asyncSender) send(f *frameBuf, b *batch) {
	if s.conn == nil {
		s.sendAcked(f, b)
		return
	}
	f.b = f.b[:0]
	err := s.build(f, b)
	addr, ok := s.p.cluster.BrokerAddr(s.id)
	if err == nil && !ok {
		err = fmt.Errorf("%w %d", ErrUnknownBroker, s.id)
	}
	if err == nil {
		err = s.p.deliver(context.Background(), s.conn, addr, b.parts[0].topic, b.parts[0].partition, f.b, b.n)
	}
	if err != nil {
		s.p.recordErr(&AsyncError{Broker: s.id, Addr: addr, Messages: b.n, Err: err})
	}
}

// sendRun writes a run of batches, each as its own MULTIPRODUCE, one after
// the other in one write on the 0.7 connection (confirm=close). A batch
// that cannot be encoded is reported and left out; a failed write reports
// every message of the run, which the connection's drop counts as lost
// like those of a single batch.
func (s *asyncSender) sendRun(f *frameBuf, run []*batch) {
	addr, ok := s.p.cluster.BrokerAddr(s.id)
	if !ok {
		n := 0
		for _, b := range run {
			n += b.n
		}
		s.p.recordErr(&AsyncError{Broker: s.id, Addr: addr, Messages: n, Err: fmt.Errorf("%w %d", ErrUnknownBroker, s.id)})
		return
	}
	f.b = f.b[:0]
	n, requests := 0, 0
	var last *batch
	for _, b := range run {
		start := len(f.b)
		if err := s.build(f, b); err != nil {
			f.b = f.b[:start]
			s.p.recordErr(&AsyncError{Broker: s.id, Addr: addr, Messages: b.n, Err: err})
			continue
		}
		n += b.n
		requests++
		last = b
	}
	if requests == 0 {
		return
	}
	if err := s.conn.write(context.Background(), addr, last.parts[0].topic, f.b, n, requests); err != nil {
		s.p.recordErr(&AsyncError{Broker: s.id, Addr: addr, Messages: n, Err: err})
	}
}

// build appends the batch's MULTIPRODUCE request frame to f.
func (s *asyncSender) build(f *frameBuf, b *batch) error {
	if len(b.parts) > 1<<15-1 {
		return errors.New("producer: a batch spans more partitions than a MULTIPRODUCE holds")
	}
	var start int
	f.b, start = wire.BeginRequest(f.b, wire.RequestMultiProduce, len(b.parts))
	for i := range b.parts {
		part := &b.parts[i]
		pos := f.beginPart(part.topic, part.partition)
		if err := f.appendSet(s.p.cfg.compressed(part.topic), part.set, s.p.cfg.MaxMessageSize); err != nil {
			return err
		}
		f.endPart(pos)
	}
	wire.EndRequest(f.b, start)
	return nil
}

// close sends everything queued and stops the goroutine.
func (s *asyncSender) close() {
	s.mu.Lock()
	s.closing = true
	if s.space != nil {
		close(s.space)
		s.space = nil
	}
	s.mu.Unlock()
	s.signal()
	<-s.done
}

// sender returns the async sender of a broker, starting it on first use.
func (p *Producer) sender(id wire.BrokerID) (*asyncSender, error) {
	p.mu.RLock()
	s := p.senders[id]
	p.mu.RUnlock()
	if s != nil {
		return s, nil
	}
	c, _, err := p.conn(id)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s = p.senders[id]; s == nil {
		s = newAsyncSender(p, id, c)
		p.senders[id] = s
	}
	return s, nil
}

// enqueue queues msgs for the async senders; sel holds the entry of each
// message (only sel[0] when not keyed).
func (p *Producer) enqueue(ctx context.Context, topic string, parts []wire.BrokerPartition, msgs []Message, sel []int, keyed bool) error {
	var s *asyncSender
	for i := range msgs {
		e := sel[0]
		if keyed {
			e = sel[i]
		}
		bp := parts[e]
		if s == nil || s.id != bp.Broker {
			var err error
			if s, err = p.sender(bp.Broker); err != nil {
				return err
			}
		}
		if err := s.enqueue(ctx, topic, bp.Partition, msgs[i].Value); err != nil {
			p.accepted.Add(int64(i)) // the earlier ones are queued
			if errors.Is(err, ErrQueueFull) {
				return fmt.Errorf("%w: broker %d already holds queue.size=%d messages; %d of the %d messages of this send were queued",
					err, bp.Broker, p.cfg.QueueSize, i, len(msgs))
			}
			return err
		}
	}
	return nil
}
