package producer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// ackPart is one partition's message set in an acknowledged send
// (PRODUCE_ACKS), with its outcome.
type ackPart struct {
	topic     string
	partition wire.Partition
	set       []byte // encoded, and compressed when the topic is
	n         int    // messages in set

	err      error         // nil once acknowledged
	retry    bool          // err is retriable
	broker   wire.BrokerID // the leader it was last sent to (-1: none)
	addr     string
	attempts int
}

// failed is the part's final error: a *ProduceError.
func (pt *ackPart) failed() error {
	return &ProduceError{Topic: pt.topic, Partition: pt.partition, Broker: pt.broker, Addr: pt.addr,
		Messages: pt.n, Attempts: pt.attempts, Err: pt.err}
}

// retriableCode reports the PRODUCE_ACKS answers after which a send is tried
// again (0.8's DefaultEventHandler retries every failure; this producer
// retries only where nothing was appended or the leader moved):
//
//   - NotLeaderForPartition, LeaderNotAvailable, FencedLeaderEpoch,
//     UnknownLeaderEpoch: the leader moved; the metadata is refreshed.
//   - NotEnoughReplicas: the leader appended nothing (it checks the ISR
//     before appending), so a retry cannot duplicate, and the ISR may grow
//     back within retry.backoff.ms; 0.8.2's producer, too, takes it as
//     retriable (NotEnoughReplicasException is a RetriableException).
//   - RequestTimedOut: the in-sync replicas did not all confirm within
//     request.timeout.ms, or the leader shut down while waiting. The
//     messages may be committed or not; as 0.8 does, the producer sends them
//     again, so that an acknowledged send is never lost, at the price of a
//     possible duplicate.
//
// Not retried: NotEnoughReplicasAfterAppend (the messages are in the
// leader's log and the request was otherwise complete; a retry would write
// them twice: Deviation: 0.8.2's Java producer retries it), and refusals of
// the messages themselves (InvalidMessage, WrongPartition, ...).
func retriableCode(c wire.ErrorCode) bool {
	switch c {
	case wire.CodeNotLeaderForPartition, wire.CodeLeaderNotAvailable, wire.CodeFencedLeaderEpoch,
		wire.CodeUnknownLeaderEpoch, wire.CodeNotEnoughReplicas, wire.CodeRequestTimedOut:
		return true
	}
	return false
}

// produceParts sends parts to their partitions' leaders in PRODUCE_ACKS
// requests, one per leader and all leaders at once, and retries each part
// that failed retriably, after retry.backoff.ms and a metadata refresh, up
// to message.send.max.retries times (0.8's DefaultEventHandler.handle).
// Each part's err is nil when it was acknowledged.
//
// A part whose connection failed after its request was written is retried
// too, as 0.8 does: the leader may have appended it, so a retry may write
// it twice (at least once, not exactly once).
func (p *Producer) produceParts(ctx context.Context, parts []*ackPart) {
	todo := parts
	for attempt := 1; ; attempt++ {
		groups := map[wire.BrokerID][]*ackPart{}
		addrs := map[wire.BrokerID]string{}
		for _, pt := range todo {
			pt.attempts, pt.err, pt.retry = attempt, nil, false
			tm, err := p.meta.get(ctx, pt.topic, false)
			if err == nil && !tm.replicated {
				err = fmt.Errorf("producer: topic %s is not replicated any more (no 0.8 assignment)", pt.topic)
				pt.err = err
				continue
			}
			var id wire.BrokerID = -1
			var addr string
			if err == nil {
				id, addr, err = tm.leader(pt.partition)
			}
			if err != nil {
				pt.broker, pt.addr, pt.err, pt.retry = id, "", err, ctx.Err() == nil
				continue
			}
			pt.broker, pt.addr = id, addr
			groups[id] = append(groups[id], pt)
			addrs[id] = addr
		}
		var wg sync.WaitGroup
		for id, g := range groups {
			wg.Go(func() { p.produceTo(ctx, id, addrs[id], g) })
		}
		wg.Wait()
		var again []*ackPart
		for _, pt := range todo {
			if pt.err != nil && pt.retry {
				again = append(again, pt)
			}
		}
		if len(again) == 0 || attempt > p.cfg.MessageSendMaxRetries || ctx.Err() != nil {
			return
		}
		for _, pt := range again {
			p.log.Info("producer: retrying", "topic", pt.topic, "partition", pt.partition, "broker", pt.broker,
				"attempt", attempt+1, "err", pt.err)
		}
		if !sleep(ctx, p.cfg.RetryBackoff) {
			return
		}
		refreshed := map[string]bool{}
		for _, pt := range again {
			if !refreshed[pt.topic] {
				refreshed[pt.topic] = true
				if _, err := p.meta.get(ctx, pt.topic, true); err != nil {
					p.log.Info("producer: metadata refresh failed", "topic", pt.topic, "err", err)
				}
			}
		}
		todo = again
	}
}

// sleep waits d or until ctx ends; false means ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// produceTo sends one PRODUCE_ACKS request holding parts to a leader and
// records each part's outcome.
func (p *Producer) produceTo(ctx context.Context, id wire.BrokerID, addr string, parts []*ackPart) {
	fail := func(err error, retry bool) {
		for _, pt := range parts {
			pt.err, pt.retry = err, retry
		}
	}
	if len(parts) > math.MaxInt16 {
		fail(fmt.Errorf("producer: one request to broker %d would span %d partitions; at most %d fit", id, len(parts), math.MaxInt16), false)
		return
	}
	req := wire.ProduceAcksRequest{Acks: p.cfg.RequiredAcks, TimeoutMs: int32(p.cfg.RequestTimeout.Milliseconds()),
		Parts: make([]wire.ProduceRequest, len(parts))}
	for i, pt := range parts {
		req.Parts[i] = wire.ProduceRequest{Topic: pt.topic, Partition: pt.partition, Messages: pt.set}
	}
	f := getFrame()
	f.b = wire.AppendProduceAcksRequest(f.b[:0], &req)
	wait := time.Duration(0)
	if p.cfg.SocketTimeout > 0 {
		wait = p.cfg.RequestTimeout + p.cfg.SocketTimeout
	}
	code, body, err := p.reqConn(id, addr).roundTrip(ctx, addr, f.b, wait)
	putFrame(f)
	if err != nil {
		fail(err, ctx.Err() == nil && !errors.Is(err, ErrClosed))
		return
	}
	rs, err := wire.DecodeProduceAcksResponse(body)
	if err != nil {
		fail(fmt.Errorf("producer: broker %d (%s): bad PRODUCE_ACKS answer: %w", id, addr, err), false)
		return
	}
	if len(rs) == 0 && code != wire.CodeNone {
		fail(fmt.Errorf("producer: broker %d (%s) refused the request: %w", id, addr, code.Err()), retriableCode(code))
		return
	}
	if len(rs) != len(parts) {
		fail(fmt.Errorf("producer: broker %d (%s) answered %d parts for %d", id, addr, len(rs), len(parts)), false)
		return
	}
	for i, pt := range parts {
		r := rs[i]
		switch {
		case r.Topic != pt.topic || r.Partition != pt.partition:
			pt.err = fmt.Errorf("producer: broker %d (%s) answered for %s-%d in place of %s-%d", id, addr, r.Topic, r.Partition, pt.topic, pt.partition)
		case r.Code != wire.CodeNone:
			pt.err, pt.retry = r.Code.Err(), retriableCode(r.Code)
		default:
			pt.err = nil
		}
	}
}

// reqConn returns the request-response connection to a broker.
func (p *Producer) reqConn(id wire.BrokerID, addr string) *reqConn {
	p.mu.RLock()
	c := p.rconns[id]
	p.mu.RUnlock()
	if c != nil {
		return c
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c = p.rconns[id]; c == nil {
		c = newReqConn(id, addr, &p.cfg, p.log)
		p.rconns[id] = c
	}
	return c
}

// sendReplicated sends msgs to a replicated topic (request.required.acks 1
// or -1): each message goes to a partition (the unkeyed ones of a Send
// together to one partition picked at random among those with a leader,
// a keyed one to Partitioner.Partition(key, partitions)); sync mode sends
// each partition's set to its leader and returns once every set is
// acknowledged or has failed (a *ProduceError per failed partition, joined);
// async mode queues the messages for the leaders' send goroutines.
func (p *Producer) sendReplicated(ctx context.Context, f *frameBuf, topic string, tm *topicMeta, msgs []Message) error {
	n := len(tm.parts)
	var live []int
	for i := range tm.parts {
		if _, _, err := tm.leader(tm.parts[i].Partition); err == nil {
			live = append(live, i)
		}
	}
	random := rand.IntN(n)
	if len(live) > 0 {
		random = live[rand.IntN(len(live))]
	}
	f.sel = f.sel[:0]
	for i := range msgs {
		e := random
		if msgs[i].Key != nil {
			e = p.part.Partition(msgs[i].Key, n)
			if e < 0 || e >= n {
				return fmt.Errorf("%w: %d for %d partitions of topic %q", ErrInvalidPartition, e, n, topic)
			}
		}
		f.sel = append(f.sel, e)
	}
	if p.cfg.Type == Async {
		for i := range msgs {
			partition := tm.parts[f.sel[i]].Partition
			leader, _, err := tm.leader(partition)
			if err != nil {
				leader = -1 // the send goroutine finds the leader, or reports the loss
			}
			s, err := p.ackSender(leader)
			if err == nil {
				err = s.enqueue(ctx, topic, partition, msgs[i].Value)
			}
			if err != nil {
				p.accepted.Add(int64(i)) // the earlier ones are queued
				if errors.Is(err, ErrQueueFull) {
					return fmt.Errorf("%w: the queue for broker %d already holds queue.size=%d messages; %d of the %d messages of this send were queued",
						err, leader, p.cfg.QueueSize, i, len(msgs))
				}
				return err
			}
		}
		return nil
	}
	codec := p.cfg.compressed(topic)
	// One set per partition, in the order of first use; every set is
	// built into f.b and sliced once f.b no longer grows.
	var parts []*ackPart
	var bounds []int
	f.b = f.b[:0]
	for i := range msgs {
		e := f.sel[i]
		if e < 0 {
			continue // already in a set
		}
		start := len(f.b)
		f.inner = f.inner[:0]
		count := 0
		for j := i; j < len(msgs); j++ {
			if f.sel[j] == e {
				f.inner = wire.AppendMessage(f.inner, msgs[j].Value)
				f.sel[j] = -1
				count++
			}
		}
		if err := f.appendSet(codec, f.inner, p.cfg.MaxMessageSize); err != nil {
			return err
		}
		parts = append(parts, &ackPart{topic: topic, partition: tm.parts[e].Partition, n: count, broker: -1})
		bounds = append(bounds, start, len(f.b))
	}
	for i, pt := range parts {
		pt.set = f.b[bounds[2*i]:bounds[2*i+1]]
	}
	p.produceParts(ctx, parts)
	var errs []error
	for _, pt := range parts {
		if pt.err != nil {
			errs = append(errs, pt.failed())
		}
	}
	return errors.Join(errs...)
}

// ackSender returns the async send goroutine for a leader (-1: for
// partitions without one), starting it on first use. Its batches go out
// through produceParts, which finds each partition's current leader.
func (p *Producer) ackSender(leader wire.BrokerID) (*asyncSender, error) {
	p.mu.RLock()
	s := p.ackSenders[leader]
	p.mu.RUnlock()
	if s != nil {
		return s, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s = p.ackSenders[leader]; s == nil {
		s = newAsyncSender(p, leader, nil)
		p.ackSenders[leader] = s
	}
	return s, nil
}

// sendAcked sends one async batch of replicated topics through
// produceParts and reports each partition's set that was not acknowledged
// as lost (an *AsyncError wrapping its *ProduceError).
func (s *asyncSender) sendAcked(f *frameBuf, b *batch) {
	f.b = f.b[:0]
	parts := make([]*ackPart, 0, len(b.parts))
	bounds := make([]int, 0, 2*len(b.parts))
	var errs []*AsyncError
	for i := range b.parts {
		bp := &b.parts[i]
		start := len(f.b)
		if err := f.appendSet(s.p.cfg.compressed(bp.topic), bp.set, s.p.cfg.MaxMessageSize); err != nil {
			errs = append(errs, &AsyncError{Broker: s.id, Messages: bp.n, Err: err})
			continue
		}
		parts = append(parts, &ackPart{topic: bp.topic, partition: bp.partition, n: bp.n, broker: -1})
		bounds = append(bounds, start, len(f.b))
	}
	for i, pt := range parts {
		pt.set = f.b[bounds[2*i]:bounds[2*i+1]]
	}
	s.p.produceParts(context.Background(), parts)
	for _, pt := range parts {
		if pt.err != nil {
			errs = append(errs, &AsyncError{Broker: pt.broker, Addr: pt.addr, Messages: pt.n, Err: pt.failed()})
		}
	}
	for _, e := range errs {
		s.p.recordErr(e)
	}
}
