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
// sealed batches one at a time as a MULTIPRODUCE, or the open one when
// queue.time has passed since its last send. Batches are recycled, so the
// steady state allocates nothing.
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
	sealed  []*batch   // full batches, oldest first
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
	s.sealed = append(s.sealed, s.open)
	if n := len(s.free); n > 0 {
		s.open, s.free = s.free[n-1], s.free[:n-1]
	} else {
		s.open = &batch{}
	}
}

// take removes the next batch to send: the oldest sealed one, or the open
// one when flush is set. It returns nil when there is nothing to send, and
// whether the sender is closing.
func (s *asyncSender) take(flush bool) (*batch, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if (flush || s.closing) && len(s.sealed) == 0 && s.open.n > 0 {
		s.sealLocked()
	}
	if len(s.sealed) == 0 {
		return nil, s.closing
	}
	b := s.sealed[0]
	copy(s.sealed, s.sealed[1:])
	s.sealed[len(s.sealed)-1] = nil
	s.sealed = s.sealed[:len(s.sealed)-1]
	s.queued -= b.n
	if s.space != nil {
		close(s.space)
		s.space = nil
	}
	return b, s.closing
}

func (s *asyncSender) recycle(b *batch) {
	b.reset()
	s.mu.Lock()
	s.free = append(s.free, b)
	s.mu.Unlock()
}

// run is the send goroutine: it sends a batch when one is sealed, and the
// open batch when queue.time has passed since the last send (0.7's
// ProducerSendThread); on close it sends everything left and returns.
func (s *asyncSender) run() {
	defer close(s.done)
	queueTime := s.p.cfg.QueueTime
	lastSend := time.Now()
	timer := time.NewTimer(queueTime)
	defer timer.Stop()
	f := &frameBuf{}
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
			b, closing := s.take(expired)
			if b == nil {
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
			s.send(f, b)
			s.recycle(b)
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
	err := s.build(f, b)
	addr, ok := s.p.cluster.BrokerAddr(s.id)
	if err == nil && !ok {
		err = fmt.Errorf("%w %d", ErrUnknownBroker, s.id)
	}
	if err == nil {
		err = s.p.deliver(context.Background(), s.conn, addr, b.parts[0].topic, b.parts[0].partition, f.end(), b.n)
	}
	if err != nil {
		s.p.recordErr(&AsyncError{Broker: s.id, Addr: addr, Messages: b.n, Err: err})
	}
}

func (s *asyncSender) build(f *frameBuf, b *batch) error {
	if len(b.parts) > 1<<15-1 {
		return errors.New("producer: a batch spans more partitions than a MULTIPRODUCE holds")
	}
	f.begin(wire.RequestMultiProduce, len(b.parts))
	for i := range b.parts {
		part := &b.parts[i]
		pos := f.beginPart(part.topic, part.partition)
		if err := f.appendSet(s.p.cfg.compressed(part.topic), part.set, s.p.cfg.MaxMessageSize); err != nil {
			return err
		}
		f.endPart(pos)
	}
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
