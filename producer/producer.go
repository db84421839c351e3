package producer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// Message is one message to send. Key only chooses the partition (0.7 stores
// no key); Value is the payload. A nil Key means no key.
type Message struct {
	Key   []byte
	Value []byte
}

// Producer sends messages to the brokers of a Cluster (0.7's
// kafka.producer.Producer). It is safe for concurrent use.
type Producer struct {
	cfg     Config
	cluster Cluster
	zk      *ZooKeeperCluster // the cluster New opened for zk.connect, closed by Close
	part    Partitioner
	log     *slog.Logger

	life   sync.RWMutex // held shared by Send, exclusively by Close
	closed bool         // guarded by life

	mu      sync.RWMutex // guards conns, senders, rconns and ackSenders
	conns   map[wire.BrokerID]*brokerConn
	senders map[wire.BrokerID]*asyncSender
	// rconns are the request-response connections of acknowledged sends
	// and metadata requests; ackSenders the async send goroutines of
	// replicated topics, by leader (request.required.acks 1 or -1).
	rconns     map[wire.BrokerID]*reqConn
	ackSenders map[wire.BrokerID]*asyncSender

	meta metadata // topic metadata (request.required.acks 1 or -1)

	zkMu      sync.Mutex         // guards zkChecked
	zkChecked map[string]zkCheck // replicatedInZK's answers (acks=0, zk.connect)

	// unreplicated holds the topics already reported not replicated
	// (notReplicated), as keys.
	unreplicated sync.Map

	errMu    sync.Mutex
	firstErr error // first error that lost messages; guarded by errMu

	accepted atomic.Int64 // messages Send returned nil for
	lost     atomic.Int64 // of those, the ones not known to be delivered
}

// New validates cfg and returns a producer. It connects lazily, on the first
// send to each broker.
func New(cfg Config) (*Producer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("producer: invalid config: %w", err)
	}
	p := &Producer{cfg: cfg, cluster: cfg.Cluster, part: cfg.Partitioner, log: cfg.Logger,
		conns: map[wire.BrokerID]*brokerConn{}, senders: map[wire.BrokerID]*asyncSender{},
		rconns: map[wire.BrokerID]*reqConn{}, ackSenders: map[wire.BrokerID]*asyncSender{}}
	p.meta = metadata{p: p, topics: map[string]*topicMeta{}}
	p.zkChecked = map[string]zkCheck{}
	if p.cluster == nil && cfg.ZkConnect != "" {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ZkConnectionTimeout)
		defer cancel()
		zc, err := NewZooKeeperCluster(ctx, zkcoord.Config{Connect: cfg.ZkConnect,
			SessionTimeout: cfg.ZkSessionTimeout, ConnectionTimeout: cfg.ZkConnectionTimeout, Logger: cfg.Logger})
		if err != nil {
			return nil, fmt.Errorf("producer: zk.connect=%s: %w", cfg.ZkConnect, err)
		}
		p.cluster, p.zk = zc, zc
	}
	if p.cluster == nil {
		c, err := NewStaticCluster(cfg.BrokerList)
		if err != nil {
			return nil, fmt.Errorf("producer: invalid config: %w", err)
		}
		p.cluster = c
	}
	if p.part == nil {
		p.part = DefaultPartitioner{}
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.cfg.CompressedTopics = append([]string(nil), cfg.CompressedTopics...)
	return p, nil
}

// Send sends msgs to topic. In sync mode it returns once every request is
// confirmed by its broker (Config.Confirm; with confirm=close, once it is
// written), or with the first error of each broker; in async mode once
// every message is queued (see ErrQueueFull). ctx bounds the wait for a connection, a write
// or room in a queue. Send copies what it needs: the caller may reuse the
// messages' memory when it returns.
func (p *Producer) Send(ctx context.Context, topic string, msgs ...Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if err := wire.ValidateTopic(topic); err != nil {
		// The broker would close the connection, and 0.7's PRODUCE has no
		// answer to tell the caller why.
		return fmt.Errorf("%w: %w", ErrInvalidTopic, err)
	}
	p.life.RLock()
	defer p.life.RUnlock()
	err := p.send(ctx, topic, msgs)
	if err == nil {
		p.accepted.Add(int64(len(msgs)))
	}
	return err
}

// send is Send once the topic is checked, with p.life held shared. (Send
// and send each have few enough returns for their defer to be open-coded,
// which matters at one message per Send.)
func (p *Producer) send(ctx context.Context, topic string, msgs []Message) error {
	if p.closed {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for i := range msgs {
		// The broker's rule (wire.OverMaxSize): the message's size field,
		// header included, not the payload's length. Deviation: 0.7's
		// producer checks the payload's length against max.message.size,
		// so a message 5-6 bytes under it passed the producer and was
		// refused by the broker, with its whole batch.
		if size := int64(wire.HeaderLenV0 + len(msgs[i].Value)); wire.OverMaxSize(size, p.cfg.MaxMessageSize) {
			return fmt.Errorf("%w: message %d of %d has %d bytes of payload, a message size of %d; max.message.size is %d",
				ErrMessageTooLarge, i, len(msgs), len(msgs[i].Value), size, p.cfg.MaxMessageSize)
		}
	}
	f := getFrame()
	defer putFrame(f)
	if p.cfg.RequiredAcks != wire.AcksNone {
		tm, err := p.topicMeta(ctx, topic)
		if err != nil {
			return err
		}
		if tm.replicated {
			return p.sendReplicated(ctx, f, topic, tm, msgs)
		}
		// A 0.7 topic: its one copy is confirmed by the round trip after
		// each request (confirm=send), which proves the append, what acks 1
		// and -1 ask of a partition whose ISR is its one broker. Deviation:
		// 0.8 has no 0.7 topics; here acks 1 and -1 to one, or to a cluster
		// of 2011 brokers (which close the connection of a METADATA), go
		// the 0.7 way.
		p.notReplicated(topic, tm.guessed)
		err = p.send07(ctx, f, topic, msgs)
		if err != nil && p.cfg.Type == Sync {
			p.meta.forget(topic) // ask again: the topic may have become replicated
		}
		return err
	}
	if zc, ok := p.cluster.(replicationRegistry); ok && p.replicatedInZK(zc, topic) {
		// acks=0 to a replicated topic: 0.7's registry does not list it,
		// so its leaders come from METADATA, as with acks 1 and -1.
		tm, err := p.topicMeta(ctx, topic)
		if err != nil {
			return err
		}
		if tm.replicated {
			return p.sendReplicated(ctx, f, topic, tm, msgs)
		}
	}
	return p.send07(ctx, f, topic, msgs)
}

// notReplicated tells, once per topic, that request.required.acks 1 or -1
// was asked for a topic that is not replicated: the user asked for copies
// and gets one (Config.OnNotReplicated, and a warning in the log).
// noLayer says no broker answered METADATA (none has the replication
// layer).
func (p *Producer) notReplicated(topic string, noLayer bool) {
	if _, told := p.unreplicated.LoadOrStore(topic, struct{}{}); told {
		return
	}
	why := "no replica assignment in ZooKeeper"
	if noLayer {
		why = "no broker has the replication layer"
	}
	p.log.Warn("producer: topic is not replicated: acknowledged by its one broker", "topic", topic,
		"acks", p.cfg.RequiredAcks, "why", why)
	if f := p.cfg.OnNotReplicated; f != nil {
		f(topic)
	}
}

// zkCheckTTL is how long an answer of ZooKeeper to "is this topic
// replicated?" is kept: the broker's notReplicatedTTL.
const zkCheckTTL = time.Second

// replicatedInZK reports whether ZooKeeper holds a replica assignment for
// the topic (acks=0 with zk.connect), asking at most once per zkCheckTTL
// per topic. An unreachable ZooKeeper keeps the last answer (none: not
// replicated, the 0.7 producer's view).
func (p *Producer) replicatedInZK(zc replicationRegistry, topic string) bool {
	now := time.Now()
	p.zkMu.Lock()
	c, ok := p.zkChecked[topic]
	p.zkMu.Unlock()
	if ok && now.Sub(c.at) < zkCheckTTL {
		return c.replicated
	}
	yes, err := zc.Replicated(topic)
	if err != nil {
		p.log.Warn("producer: cannot read the topic's assignment in ZooKeeper", "topic", topic, "err", err)
		yes = c.replicated
	}
	p.zkMu.Lock()
	p.zkChecked[topic] = zkCheck{replicated: yes, at: now}
	p.zkMu.Unlock()
	return yes
}

// replicationRegistry is a Cluster that can tell a replicated topic
// (ZooKeeperCluster).
type replicationRegistry interface {
	Replicated(topic string) (bool, error)
}

// zkCheck is one answer of replicatedInZK.
type zkCheck struct {
	replicated bool
	at         time.Time
}

// topicMeta returns a topic's metadata, asking the brokers again after
// retry.backoff.ms, up to message.send.max.retries times, when none
// answers.
func (p *Producer) topicMeta(ctx context.Context, topic string) (*topicMeta, error) {
	tm, err := p.meta.get(ctx, topic, false)
	for i := 0; err != nil && i < p.cfg.MessageSendMaxRetries && ctx.Err() == nil; i++ {
		p.log.Info("producer: no metadata; retrying", "topic", topic, "err", err)
		if !sleep(ctx, p.cfg.RetryBackoff) {
			break
		}
		tm, err = p.meta.get(ctx, topic, true)
	}
	return tm, err
}

// send07 is the 0.7 producer's send: to the Cluster's (broker, partition)
// entries, in PRODUCE and MULTIPRODUCE requests.
func (p *Producer) send07(ctx context.Context, f *frameBuf, topic string, msgs []Message) error {
	parts := p.cluster.Partitions(topic)
	if len(parts) == 0 {
		return fmt.Errorf("%w %q", ErrNoBrokers, topic)
	}
	// The unkeyed messages of a Send go to one random entry, and so do all
	// messages when the broker picks partitions (static broker.list).
	random := 0
	if len(parts) > 1 {
		random = rand.IntN(len(parts))
	}
	keyed := false
	if parts[0].Partition != wire.RandomPartition {
		for i := range msgs {
			if msgs[i].Key != nil {
				keyed = true
				break
			}
		}
	}
	f.sel = f.sel[:0]
	for i := range msgs {
		e := random
		if keyed && msgs[i].Key != nil {
			e = p.part.Partition(msgs[i].Key, len(parts))
			if e < 0 || e >= len(parts) {
				return fmt.Errorf("%w: %d for %d partitions of topic %q", ErrInvalidPartition, e, len(parts), topic)
			}
		}
		f.sel = append(f.sel, e)
		if !keyed {
			break
		}
	}
	if p.cfg.Type == Async {
		return p.enqueue(ctx, topic, parts, msgs, f.sel, keyed)
	}
	if !keyed {
		return p.sendOne(ctx, f, topic, parts[random], msgs)
	}
	return p.sendKeyed(ctx, f, topic, parts, msgs)
}

// sendOne sends all msgs to one entry in one PRODUCE request.
func (p *Producer) sendOne(ctx context.Context, f *frameBuf, topic string, bp wire.BrokerPartition, msgs []Message) error {
	c, addr, err := p.conn(bp.Broker)
	if err != nil {
		return err
	}
	f.begin(wire.RequestProduce, 1)
	pos := f.beginPart(topic, bp.Partition)
	if codec := p.cfg.compressed(topic); codec == wire.CodecNone {
		for i := range msgs {
			f.b = wire.AppendMessage(f.b, msgs[i].Value)
		}
	} else {
		f.inner = f.inner[:0]
		for i := range msgs {
			f.inner = wire.AppendMessage(f.inner, msgs[i].Value)
		}
		if err := f.appendSet(codec, f.inner, p.cfg.MaxMessageSize); err != nil {
			return err
		}
	}
	f.endPart(pos)
	return p.deliver(ctx, c, addr, topic, bp.Partition, f.end(), len(msgs))
}

// deliver writes a produce request frame to a broker and, with
// confirm=send, ends it with a round trip (brokerConn.confirm) so that a
// nil error means the broker appended it. n is the number of messages the
// frame carries. On a replicated topic with request.required.acks 1 or -1
// the PRODUCE_ACKS answer takes the round trip's place (produceParts).
func (p *Producer) deliver(ctx context.Context, c *brokerConn, addr, topic string, partition wire.Partition, frame []byte, n int) error {
	if p.cfg.confirm() != ConfirmSend {
		return c.write(ctx, addr, topic, frame, n, 1)
	}
	if err := c.write(ctx, addr, topic, frame, 0, 1); err != nil {
		return err
	}
	if err := c.confirm(ctx, topic, partition); err != nil {
		where := fmt.Sprintf("partition %d", partition)
		if partition == wire.RandomPartition {
			where = "the partition the broker picked"
		}
		return fmt.Errorf("%w (send of %d messages to topic %s, %s)", err, n, topic, where)
	}
	return nil
}

// sendKeyed sends msgs, each to the entry f.sel gives it: one request per
// broker, PRODUCE for a single partition and MULTIPRODUCE otherwise. A
// failing broker does not stop the others; the errors are joined.
func (p *Producer) sendKeyed(ctx context.Context, f *frameBuf, topic string, parts []wire.BrokerPartition, msgs []Message) error {
	codec := p.cfg.compressed(topic)
	var errs []error
	for i := range msgs {
		if f.sel[i] < 0 {
			continue // sent with an earlier broker
		}
		broker := parts[f.sel[i]].Broker
		f.ents = f.ents[:0]
		for j := i; j < len(msgs); j++ {
			if e := f.sel[j]; e >= 0 && parts[e].Broker == broker && !containsInt(f.ents, e) {
				f.ents = append(f.ents, e)
			}
		}
		if len(f.ents) > math.MaxInt16 {
			return fmt.Errorf("producer: one send spans %d partitions of broker %d; at most %d fit a MULTIPRODUCE", len(f.ents), broker, math.MaxInt16)
		}
		if len(f.ents) == 1 {
			f.begin(wire.RequestProduce, 1)
		} else {
			f.begin(wire.RequestMultiProduce, len(f.ents))
		}
		var err error
		for _, e := range f.ents {
			pos := f.beginPart(topic, parts[e].Partition)
			f.inner = f.inner[:0]
			for j := i; j < len(msgs); j++ {
				if f.sel[j] != e {
					continue
				}
				f.sel[j] = -2 - e // sent: sendKeyed skips it; countEntry counts it
				if codec == wire.CodecNone {
					f.b = wire.AppendMessage(f.b, msgs[j].Value)
				} else {
					f.inner = wire.AppendMessage(f.inner, msgs[j].Value)
				}
			}
			if codec != wire.CodecNone && err == nil {
				err = f.appendSet(codec, f.inner, p.cfg.MaxMessageSize)
			}
			f.endPart(pos)
		}
		if err == nil {
			var c *brokerConn
			var addr string
			if c, addr, err = p.conn(broker); err == nil {
				n := 0
				for _, e := range f.ents {
					n += countEntry(f.sel, e, i, len(msgs))
				}
				err = p.deliver(ctx, c, addr, topic, parts[f.ents[0]].Partition, f.end(), n)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// countEntry counts the messages from i on that were marked sent for entry
// e; sendKeyed marks them -1-e... (see sendKeyed).
func countEntry(sel []int, e, i, n int) int {
	c := 0
	for j := i; j < n; j++ {
		if sel[j] == -2-e {
			c++
		}
	}
	return c
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// conn returns the connection to a broker and the broker's current address.
func (p *Producer) conn(id wire.BrokerID) (*brokerConn, string, error) {
	addr, ok := p.cluster.BrokerAddr(id)
	if !ok {
		return nil, "", fmt.Errorf("%w %d", ErrUnknownBroker, id)
	}
	p.mu.RLock()
	c := p.conns[id]
	p.mu.RUnlock()
	if c == nil {
		p.mu.Lock()
		if c = p.conns[id]; c == nil {
			c = newBrokerConn(id, addr, &p.cfg, p.log, p.noteLost)
			p.conns[id] = c
		}
		p.mu.Unlock()
	}
	return c, addr, nil
}

// recordErr reports an async error to the handler and counts its lost
// messages.
func (p *Producer) recordErr(err *AsyncError) {
	p.noteLost(err.Messages, err)
	if p.cfg.ErrorHandler != nil {
		p.cfg.ErrorHandler(err)
	}
}

// noteLost counts n accepted messages as not delivered, keeps the first
// cause for Close, and logs it.
func (p *Producer) noteLost(n int, cause error) {
	p.lost.Add(int64(n))
	p.errMu.Lock()
	if p.firstErr == nil {
		p.firstErr = cause
	}
	p.errMu.Unlock()
	p.log.Warn("producer: messages not delivered", "messages", n, "err", cause)
}

// Stats counts what a producer was given and what it could not deliver.
type Stats struct {
	// Accepted is the number of messages Send returned nil for.
	Accepted int64
	// NotDelivered is the number of those not known to be delivered: in
	// async batches that failed, and written on connections that closed
	// before a round trip confirmed them (see Config.Confirm). With
	// confirm=send, a sync Send that returns nil has been appended, so
	// only async batches can count here.
	NotDelivered int64
}

// Stats returns the producer's counts so far; after Close, the final ones.
func (p *Producer) Stats() Stats {
	return Stats{Accepted: p.accepted.Load(), NotDelivered: p.lost.Load()}
}

// Close waits for the Sends in progress, sends everything still queued
// (async), confirms what is unconfirmed on each connection with one round
// trip, and closes the connections. When messages were not delivered it
// returns a *LossError counting them (Stats has the same counts), else the
// first error from closing; a second Close returns nil.
func (p *Producer) Close() error {
	p.life.Lock()
	if p.closed {
		p.life.Unlock()
		return nil
	}
	p.closed = true
	p.life.Unlock()

	p.mu.RLock()
	senders := make([]*asyncSender, 0, len(p.senders)+len(p.ackSenders))
	for _, s := range p.senders {
		senders = append(senders, s)
	}
	for _, s := range p.ackSenders {
		senders = append(senders, s)
	}
	p.mu.RUnlock()
	for _, s := range senders {
		s.close()
	}
	var errs []error
	p.mu.RLock()
	for _, c := range p.conns {
		if err := c.close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range p.rconns {
		c.close()
	}
	p.mu.RUnlock()
	if p.zk != nil {
		if err := p.zk.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if st := p.Stats(); st.NotDelivered > 0 {
		p.errMu.Lock()
		defer p.errMu.Unlock()
		return &LossError{NotDelivered: st.NotDelivered, Accepted: st.Accepted, First: p.firstErr}
	}
	return errors.Join(errs...)
}
