package faults

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/experiments/faults/check"
)

// Acknowledgement modes of the workload's producers.
const (
	// AckNone is 0.7's PRODUCE and nothing else (acks=0): no message is ever
	// acknowledged, every outcome is unknown.
	AckNone = "none"
	// AckAppend follows each PRODUCE with a round trip on the same
	// connection (an OFFSETS request); its answer acknowledges every message
	// sent before it: the broker has appended them (to the page cache, not
	// necessarily to the disk). This is what a 0.7 producer can learn at most.
	AckAppend = "append"
	// AckFlush acknowledges a message once the producer's own reader sees it:
	// a 0.7 broker shows only flushed (fsynced) messages.
	AckFlush = "flush"
)

// partition is one partition the workload writes: where it lives and its
// name in the history.
type partition struct {
	tp     check.TP // as the history names it
	topic  string   // on the wire
	part   int32    // on the wire
	broker int      // the broker holding it
}

// workload runs producers and a live reader per partition and records
// every send and read.
type workload struct {
	cl        *Cluster
	parts     []partition
	setup     Setup
	batch     int
	interval  time.Duration
	size      int   // payload bytes; 0: drawn per message (messageSize)
	seed      int64 // draws the sizes
	timeout   time.Duration
	gate      *sync.RWMutex // held exclusively by a nemesis reading flush points
	producers int
	clients   string                        // which producers run (ClientsWire, ...)
	start     time.Time                     // the trial's start: sends' monotonic times
	note      func(format string, a ...any) // the trial's notes
	// budget, when positive, is how many bytes the producers may send to
	// one partition, every attempt counted (retries too): kept below the
	// brokers' log.retention.size in a trial with a retention nemesis, so
	// that retention never deletes the head of a partition the checker
	// reads from offset 0 (the soak's seed 464: a long compound trial's
	// workload outgrew the limit, its final reads found offset 0 gone, and
	// the trial was invalid).
	budget int64

	mu    sync.Mutex
	sends map[check.ID]*check.Event
	order []check.ID
	reads []check.Event
	spent map[check.TP]int64 // bytes sent to each partition, against budget
}

// spend charges n bytes sent to p against the budget; false when they
// would take p past it, and then p's producers stop (noted once).
func (w *workload) spend(p partition, n int64) bool {
	if w.budget <= 0 {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.spent == nil {
		w.spent = map[check.TP]int64{}
	}
	was := w.spent[p.tp]
	if was+n <= w.budget {
		w.spent[p.tp] = was + n
		return true
	}
	if was <= w.budget {
		w.spent[p.tp] = w.budget + 1 // noted once
		w.note("%s: the producers stop at %d bytes sent, below log.retention.size", p.tp, was)
	}
	return false
}

// nextBatch draws producer id's next batch for p (seq is the last sequence
// number it used), charges it against the budget and records it as sent
// on connection conn (0: the producer library's); false when the budget is
// spent.
func (w *workload) nextBatch(id int, p partition, seq *int64, sizes *rand.Rand, conn int) ([]check.ID, [][]byte, bool) {
	ids := make([]check.ID, w.batch)
	payloads := make([][]byte, w.batch)
	for i := range ids {
		ids[i] = check.ID{Producer: id, Seq: *seq + int64(i) + 1}
		size := w.size
		if size == 0 {
			size = messageSize(sizes)
		}
		payloads[i] = check.Payload(ids[i], size)
	}
	if !w.spend(p, batchBytes(payloads)) {
		return nil, nil, false
	}
	*seq += int64(len(ids))
	now := time.Now()
	for _, id := range ids {
		w.send(id, p, now, conn)
	}
	return ids, payloads, true
}

// batchBytes is what payloads take in a log: each with its header.
func batchBytes(payloads [][]byte) int64 {
	var n int64
	for _, p := range payloads {
		n += int64(wire.Overhead + len(p))
	}
	return n
}

// send records a message sent at start, on a wire producer's connection
// conn (0: the producer library's).
func (w *workload) send(id check.ID, p partition, start time.Time, conn int) {
	e := &check.Event{Type: check.TypeSend, Producer: id.Producer, Seq: id.Seq, Topic: p.tp.Topic,
		Partition: p.tp.Partition, Acks: 0, Outcome: check.Unknown, Start: start, StartMono: start.Sub(w.start).Nanoseconds(), Conn: conn}
	w.mu.Lock()
	w.sends[id] = e
	w.order = append(w.order, id)
	w.mu.Unlock()
}

func (w *workload) settle(ids []check.ID, outcome string, at time.Time, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		e := w.sends[id]
		if e == nil || e.Outcome == check.OK {
			continue
		}
		e.Outcome, e.End, e.Mono = outcome, at, at.Sub(w.start).Nanoseconds()
		if err != nil {
			e.Error = err.Error()
		}
	}
}

// refuse marks sends the leader refused before appending them (a
// NotEnoughReplicas answer): check.Event.Refused.
func (w *workload) refuse(ids []check.ID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if e := w.sends[id]; e != nil && e.Outcome == check.Failed {
			e.Refused = true
		}
	}
}

// run starts the producers and live readers and returns when ctx ends:
// per partition i (from 0) the wire producer i+1 and the library producer
// N+i+1 (N partitions), as w.clients says.
func (w *workload) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i, p := range w.parts {
		if w.usesWire() {
			wg.Go(func() { w.produce(ctx, i+1, p) })
		}
		if w.usesLibrary() {
			wg.Go(func() { w.produceLib(ctx, len(w.parts)+i+1, p) })
		}
		wg.Go(func() { w.follow(ctx, p) })
	}
	wg.Wait()
}

// connect opens a connection to p's broker: its own in the 2011 system,
// its leader (asked of the brokers) in a replicated topic.
func (w *workload) connect(ctx context.Context, p partition) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	b := p.broker
	if b == 0 {
		var err error
		if b, err = w.cl.Leader(ctx, p.topic, p.part); err != nil {
			return nil, err
		}
	}
	return newConn(ctx, w.cl.Dial, w.cl.BrokerAddr(b), w.timeout)
}

// produce writes sequence-numbered messages to p as producer id, batch by
// batch, every interval, reconnecting after errors.
func (w *workload) produce(ctx context.Context, id int, p partition) {
	var c *conn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	seq := int64(0)
	conns := 0 // connections opened, the current one's number
	sizes := rand.New(rand.NewPCG(uint64(w.seed), uint64(id)))
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if c == nil {
			var err error
			if c, err = w.connect(ctx, p); err != nil {
				c = nil
				continue
			}
			conns++
		}
		ids, payloads, ok := w.nextBatch(id, p, &seq, sizes, conns)
		if !ok {
			return
		}
		set := wire.NewMessageSet(payloads...)
		if w.setup.Replicated() {
			if !w.produceAcks(c, p, ids, set) {
				c.Close()
				c = nil
			}
			continue
		}
		err := c.produce(p.topic, p.part, set)
		if err == nil && w.setup.Acks == AckAppend {
			_, err = c.latest(p.topic, p.part)
			if err == nil {
				w.settle(ids, check.OK, time.Now(), nil)
			}
		}
		if err != nil {
			// Written or not, appended or not: nobody knows.
			w.settle(ids, check.Unknown, time.Now(), err)
			c.Close()
			c = nil
		}
	}
}

// MaxMessageSize is the largest payload of the varied-size workload: 10 KiB.
const MaxMessageSize = 10 << 10

// messageSize draws a payload size from 1 byte to MaxMessageSize,
// log-uniformly (as many messages under 100 bytes as from 1 to 10 KiB), so
// that the byte offsets of messages fall everywhere and one that is not a
// message boundary is noticed: with one size every multiple of it is a
// boundary. A payload is never shorter than the name it carries (about 15
// bytes; check.Payload).
func messageSize(r *rand.Rand) int {
	return int(math.Exp(r.Float64() * math.Log(MaxMessageSize+1)))
}

// produceAcks sends one batch with the setup's acks and records the
// outcome; false means the connection must be dropped (an error, or a
// broker that is not the leader).
func (w *workload) produceAcks(c *conn, p partition, ids []check.ID, set []byte) bool {
	code, base, err := c.produceAcks(w.setup.wireAcks(), w.timeout, p.topic, p.part, set)
	now := time.Now()
	switch {
	case err != nil:
		w.settle(ids, check.Unknown, now, err)
		return false
	case code == wire.CodeNone:
		w.settle(ids, check.OK, now, nil)
		// Where the broker put each message: the first at base, the
		// others after it.
		w.mu.Lock()
		it := wire.NewIterator(set, wire.Offset(base))
		for i := 0; i < len(ids) && it.Next(); i++ {
			at := int64(it.Offset())
			w.sends[ids[i]].At = &at
		}
		w.mu.Unlock()
		return true
	case code == wire.CodeNotEnoughReplicas:
		// Refused before appending.
		w.settle(ids, check.Failed, now, code.Err())
		w.refuse(ids)
		return true
	default:
		// Not the leader (perhaps after appending), timed out, or the ISR
		// shrank after the append: nobody knows.
		w.settle(ids, check.Unknown, now, code.Err())
		return false
	}
}

// follow reads p as it grows (reader "live"), from the start, and in
// AckFlush mode acknowledges what it sees. A log found shorter than what it
// read (OffsetOutOfRange) is followed from its new end: what it then reads
// at offsets it read before shows up as offsets meaning two things.
func (w *workload) follow(ctx context.Context, p partition) {
	var c *conn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	var pos int64
	var connected time.Time
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if c != nil && p.broker == 0 && time.Since(connected) > time.Second {
			// Follow leader changes that raise no error.
			c.Close()
			c = nil
		}
		if c == nil {
			var err error
			if c, err = w.connect(ctx, p); err != nil {
				c = nil
				continue
			}
			connected = time.Now()
		}
		w.gate.RLock()
		msgs, next, err := c.fetch(p.topic, p.part, pos, 1<<20)
		now := time.Now()
		var ids []check.ID
		w.mu.Lock()
		for _, m := range msgs {
			e := check.ReadEvent("live", p.tp, m.offset, m.payload)
			e.Wall, e.Mono = now, now.Sub(w.start).Nanoseconds()
			w.reads = append(w.reads, e)
			if e.Raw == "" {
				ids = append(ids, check.ID{Producer: e.Producer, Seq: e.Seq})
			}
		}
		w.mu.Unlock()
		if w.setup.Acks == AckFlush {
			w.settle(ids, check.OK, now, nil)
		}
		w.gate.RUnlock()
		pos = next
		switch {
		case isOutOfRange(err):
			if end, lerr := c.latest(p.topic, p.part); lerr == nil && end < pos {
				pos = end
			}
		case err != nil:
			c.Close()
			c = nil
		}
	}
}

// readAll reads p from the start to its end as reader name, and records an
// end event when it got there. The end is the visible end OFFSETS reports
// (2011), or where a fetch from the leader returns nothing (replicated:
// fetches stop at the high watermark). It gives up when it has read
// nothing for readStall, however long the partition: a long compound
// trial writes hundreds of megabytes (the soak's seed 464: 360,000
// messages, not read in a fixed 30 s under the load of three runs side by
// side, so the trial was invalid).
func (w *workload) readAll(ctx context.Context, name string, p partition) ([]check.Event, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stalled := time.AfterFunc(readStall, cancel) // pushed back by every read that brings something
	defer stalled.Stop()
	var evs []check.Event
	var pos int64
	var c *conn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for ctx.Err() == nil {
		if c == nil {
			var err error
			if c, err = w.connect(ctx, p); err != nil {
				c = nil
				sleep(ctx, 100*time.Millisecond)
				continue
			}
		}
		end := int64(-1)
		var err error
		if !w.setup.Replicated() {
			end, err = c.latest(p.topic, p.part)
			if err == nil && pos >= end {
				evs = append(evs, check.Event{Type: check.TypeEnd, Reader: name, Topic: p.tp.Topic, Partition: p.tp.Partition, Offset: pos})
				return evs, nil
			}
		}
		var msgs []fetched
		if err == nil {
			msgs, pos, err = c.fetch(p.topic, p.part, pos, 1<<20)
			if len(msgs) > 0 {
				stalled.Reset(readStall)
			}
			for _, m := range msgs {
				e := check.ReadEvent(name, p.tp, m.offset, m.payload)
				e.Wall = time.Now()
				e.Mono = e.Wall.Sub(w.start).Nanoseconds()
				evs = append(evs, e)
			}
			if err == nil && len(msgs) == 0 {
				if end < 0 {
					evs = append(evs, check.Event{Type: check.TypeEnd, Reader: name, Topic: p.tp.Topic, Partition: p.tp.Partition, Offset: pos})
					return evs, nil
				}
				return evs, fmt.Errorf("faults: %s-%d: nothing at %d below end %d", p.topic, p.part, pos, end)
			}
		}
		if err != nil {
			c.Close()
			c = nil
		}
	}
	return evs, errors.Join(ctx.Err(), fmt.Errorf("faults: %s did not reach the end of %s (nothing read for %v, %d messages read)",
		name, p.tp, readStall, len(evs)))
}

// readStall is how long a final read may go without reading anything.
const readStall = 30 * time.Second
