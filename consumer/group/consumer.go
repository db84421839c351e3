package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netdb11/kafka/zkcoord"

	"github.com/netdb11/kafka/broker/wire"
)

// Consumer is one member of a consumer group (0.7's
// ZookeeperConsumerConnector). It registers in ZooKeeper, takes its share of
// the partitions with Algorithm 1 whenever the group or the brokers change,
// fetches them in the background, and hands their messages to its streams.
type Consumer struct {
	cfg     Config
	id      string
	sub     zkcoord.Subscription
	conn    *zkcoord.Conn
	log     *slog.Logger
	streams map[string][]*Stream // per topic (static subscription); fixed at New
	// filterStreams are a wildcard subscription's streams; fixed at NewByFilter.
	filterStreams []*Stream
	byID          map[streamKey]*Stream // fixed at New; see streamFor

	// gen is the ownership generation: bumped when ownership is given up,
	// so that streams drop chunks fetched under an older one.
	gen atomic.Uint64

	// resets counts the positions autooffset.reset moved; see Resets.
	resets struct{ outOfRange, notBoundary atomic.Int64 }

	// Owned by the loop goroutine:
	owned        map[wire.BrokerPartition]map[string]*partitionState // partition -> topic -> state
	ownedSession int64                                               // session that claimed owned
	// matched lists the existing topics this consumer's subscription takes,
	// as of the last rebalance that read /brokers/topics (matchedKnown).
	matched      []string
	matchedKnown bool
	// initialTopics are the topics that had partitions at the first
	// rebalance; a topic outside it is new (see Config.StartOffset).
	initialTopics map[string]bool
	stopFetchers  func() // stops and waits for the fetchers

	viewMu sync.Mutex
	view   map[string][]wire.BrokerPartition // owned partitions per topic; guarded by viewMu
	// leaders fetches the owned replicated partitions (nil: none); set by
	// the loop, guarded by viewMu for tests' reads.
	leaders *leaderFetchers

	commitReq chan chan error
	closing   chan struct{} // closed by Close: streams return ErrClosed
	cancel    context.CancelFunc
	done      chan struct{} // closed when the loop has returned
	closeOnce sync.Once
	closeErr  error
}

// New joins the group, consuming each topic of topics with its number of
// streams (0.7's createMessageStreams): it registers
// /consumers/<group>/ids/<consumerId> holding {"<topic>": <streams>} and
// starts its event loop, whose first rebalance claims partitions and starts
// fetching (retried until it succeeds). The consumer lives until Close.
func New(ctx context.Context, cfg Config, topics map[string]int) (*Consumer, error) {
	sub, err := zkcoord.StaticSubscription(topics)
	if err != nil {
		return nil, fmt.Errorf("group: %w", err)
	}
	return newConsumer(ctx, cfg, sub)
}

// streamKey names a stream: a topic and a thread id, the topic empty for a
// wildcard subscription's streams (each takes every topic of its thread).
type streamKey struct{ topic, thread string }

// streamFor returns the stream that delivers topic's partitions owned by
// thread.
func (c *Consumer) streamFor(topic, thread string) *Stream {
	if c.sub.IsWildcard() {
		topic = ""
	}
	return c.byID[streamKey{topic, thread}]
}

// newConsumer registers sub and starts the event loop.
func newConsumer(ctx context.Context, cfg Config, sub zkcoord.Subscription) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	id := cfg.ConsumerID
	if id == "" {
		id = zkcoord.NewConsumerID(cfg.GroupID, time.Now())
	} else {
		// 0.7 prefixes a configured id with the group as well.
		id = cfg.GroupID + "_" + id
	}
	log = log.With("consumer", id)
	conn, err := zkcoord.Dial(ctx, zkcoord.Config{
		Connect:           cfg.ZkConnect,
		SessionTimeout:    cfg.ZkSessionTimeout,
		ConnectionTimeout: cfg.ZkConnectionTimeout,
		Logger:            log,
		Dial:              cfg.ZkDial,
	})
	if err != nil {
		return nil, fmt.Errorf("group: %w", err)
	}
	c := &Consumer{
		cfg:       cfg,
		id:        id,
		sub:       sub,
		conn:      conn,
		log:       log,
		streams:   make(map[string][]*Stream),
		byID:      make(map[streamKey]*Stream),
		commitReq: make(chan chan error),
		closing:   make(chan struct{}),
		done:      make(chan struct{}),
	}
	if sub.IsWildcard() {
		for n := 0; n < sub.Streams; n++ {
			th := zkcoord.ThreadID(id, n)
			s := &Stream{c: c, threadID: th, queue: make(chan *chunk, cfg.QueuedChunks)}
			c.filterStreams = append(c.filterStreams, s)
			c.byID[streamKey{"", th}] = s
		}
	} else {
		for topic, threads := range sub.ThreadIDs(id, nil) {
			for _, th := range threads {
				s := &Stream{c: c, topic: topic, threadID: th, queue: make(chan *chunk, cfg.QueuedChunks)}
				c.streams[topic] = append(c.streams[topic], s)
				c.byID[streamKey{topic, th}] = s
			}
		}
	}
	if err := zkcoord.GroupsOn(conn).RegisterConsumer(cfg.GroupID, id, sub); err != nil {
		return nil, errors.Join(fmt.Errorf("group: register consumer %s: %w", id, err), conn.Close())
	}
	log.Info("registered consumer", "path", zkcoord.ConsumerPath(cfg.GroupID, id), "subscription", sub.String())
	lctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go c.run(lctx)
	return c, nil
}

// ID returns the consumer id registered under /consumers/<group>/ids.
func (c *Consumer) ID() string { return c.id }

// Resets counts the partition positions a consumer moved by
// autooffset.reset since it started (each also logged at WARN with the
// bytes it skips or reads again).
type Resets struct {
	// OutOfRange counts fetches answered OffsetOutOfRange: the position
	// had left the log (retention deleted it).
	OutOfRange int64
	// NotBoundary counts fetches answered InvalidMessage because no
	// message starts at the position: it lies inside a message of a log
	// that was truncated below it and written again (an unclean or
	// high-watermark election), or a committed offset was wrong.
	NotBoundary int64
}

// Resets returns how many positions autooffset.reset moved so far.
func (c *Consumer) Resets() Resets {
	return Resets{OutOfRange: c.resets.outOfRange.Load(), NotBoundary: c.resets.notBoundary.Load()}
}

// Streams returns the topic's streams, one per consumer thread, in thread
// order (nil for a consumer made by NewByFilter: see FilterStreams). Each
// stream is read by one goroutine.
func (c *Consumer) Streams(topic string) []*Stream { return c.streams[topic] }

// Owned returns the partitions this consumer owns now, per topic, sorted
// (a replicated topic's partitions have Broker zkcoord.ReplicatedBroker).
func (c *Consumer) Owned() map[string][]wire.BrokerPartition {
	c.viewMu.Lock()
	defer c.viewMu.Unlock()
	out := make(map[string][]wire.BrokerPartition, len(c.view))
	for t, ps := range c.view {
		out[t] = append([]wire.BrokerPartition(nil), ps...)
	}
	return out
}

// ownedNames is Owned with the registry's partition names, for logs.
func (c *Consumer) ownedNames() map[string][]string {
	out := make(map[string][]string)
	for t, ps := range c.Owned() {
		for _, bp := range ps {
			out[t] = append(out[t], zkcoord.PartitionNodeName(bp))
		}
	}
	return out
}

// Commit writes the offsets of the consumed messages of every owned
// partition to ZooKeeper now (0.7's commitOffsets).
func (c *Consumer) Commit() error {
	reply := make(chan error, 1)
	select {
	case c.commitReq <- reply:
		return <-reply
	case <-c.done:
		return ErrClosed
	}
}

// Close leaves the group: it stops fetching, marks the messages returned by
// the streams consumed, commits (when autocommit.enable is set, as 0.7) and
// ends the session, which releases the consumer's partitions at once. Call it
// after the streams' readers have finished with their last messages. Next
// returns ErrClosed afterwards.
func (c *Consumer) Close() error {
	c.closeOnce.Do(func() {
		close(c.closing)
		c.cancel()
		<-c.done
		c.closeErr = c.conn.Close()
	})
	return c.closeErr
}

// run is the consumer's event loop: every ZooKeeper event, commit and
// rebalance happens here, one at a time.
func (c *Consumer) run(ctx context.Context) {
	defer close(c.done)
	defer c.shutdown()
	var tick <-chan time.Time
	if c.cfg.AutoCommit {
		t := time.NewTicker(c.cfg.AutoCommitInterval)
		defer t.Stop()
		tick = t.C
	}
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	needRebalance := true // the first one
	for {
		if needRebalance {
			needRebalance = false
			if err := c.syncedRebalance(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				c.log.Error("rebalance failed; trying again later", "err", err)
				retry.Reset(c.cfg.RebalanceBackoff + time.Millisecond)
			}
		}
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-c.conn.Events():
			if !ok {
				return
			}
			needRebalance = c.handle(ev)
			// Take every event already waiting: one rebalance for a burst.
			for more := true; more; {
				select {
				case ev, ok := <-c.conn.Events():
					if !ok {
						return
					}
					needRebalance = c.handle(ev) || needRebalance
				default:
					more = false
				}
			}
		case <-tick:
			if err := c.commit(); err != nil {
				c.log.Warn("autocommit failed", "err", err)
			}
		case reply := <-c.commitReq:
			reply <- c.commit()
		case <-retry.C:
			needRebalance = true
		}
	}
}

// handle reacts to one ZooKeeper event; it reports whether to rebalance.
func (c *Consumer) handle(ev zkcoord.Event) bool {
	switch ev.Type {
	case zkcoord.EventSessionExpired:
		// Every owner node went with the session: stop at once, and forget
		// the partitions without committing (others may own them now).
		c.log.Warn("zookeeper session expired; releasing partitions")
		c.giveUp()
		c.owned = nil
		c.publishView()
		return false
	case zkcoord.EventNewSession:
		// 0.7's ZKSessionExpireListener: register again, then rebalance.
		if err := zkcoord.GroupsOn(c.conn).RegisterConsumer(c.cfg.GroupID, c.id, c.sub); err != nil {
			c.log.Error("re-registering the consumer failed", "err", err)
		} else {
			c.log.Info("re-registered consumer in the new session")
		}
		return true
	case zkcoord.EventChildren:
		if ev.Path == zkcoord.BrokerTopicsPath {
			return c.topicsChanged()
		}
	}
	return true // the group's members or a topic's partitions changed
}

// topicsChanged re-reads /brokers/topics (watching it again) after a topic
// came or went, and reports whether the topics this consumer takes changed.
// As 0.7's WildcardStreamsHandler, a topic the subscription does not take
// starts no rebalance: Algorithm 1 runs per topic, so this consumer's share
// of the topics it takes cannot change.
func (c *Consumer) topicsChanged() bool {
	if !c.matchedKnown {
		return true
	}
	all, err := zkcoord.RegistryOn(c.conn).Topics(true)
	if err != nil {
		return true
	}
	m := c.matching(all)
	if slices.Equal(m, c.matched) {
		c.log.Debug("topics changed, none this consumer takes", "topics", len(all))
		return false
	}
	c.log.Info("the subscribed topics changed; rebalancing", "before", c.matched, "now", m)
	return true
}

// matching lists the topics of all the subscription takes, sorted.
func (c *Consumer) matching(all []string) []string {
	var out []string
	for _, t := range all {
		if c.sub.Matches(t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// shutdown stops fetching and, with autocommit, commits what the streams
// returned; the loop is ending.
func (c *Consumer) shutdown() {
	c.giveUp()
	if c.cfg.AutoCommit && c.owned != nil {
		for _, s := range c.byID {
			s.Ack()
		}
		if err := c.commit(); err != nil {
			c.log.Warn("final commit failed", "err", err)
		}
	}
}

// giveUp stops the fetchers and invalidates every chunk fetched so far.
func (c *Consumer) giveUp() {
	c.gen.Add(1)
	if c.stopFetchers != nil {
		c.stopFetchers()
		c.stopFetchers = nil
	}
	for _, s := range c.byID {
		s.drain()
	}
}

// commit writes the consumed offset of every owned partition that moved. It
// writes nothing when the session that claimed the partitions is gone: the
// partitions may have new owners whose offsets must not be overwritten.
func (c *Consumer) commit() error {
	if c.owned == nil {
		return nil
	}
	if s := c.conn.SessionID(); s != c.ownedSession {
		return fmt.Errorf("group: not committing: the session that owned the partitions (%#x) is gone", c.ownedSession)
	}
	var errs []error
	for bp, byTopic := range c.owned {
		for topic, ps := range byTopic {
			off := ps.consumed.Load()
			if off == ps.committed || off < 0 { // < 0: not started (partitionState.startAt)
				continue
			}
			if err := zkcoord.GroupsOn(c.conn).CommitOffset(c.cfg.GroupID, topic, bp, off); err != nil {
				errs = append(errs, err)
				continue
			}
			ps.committed = off
		}
	}
	return errors.Join(errs...)
}

// publishView copies the owned partitions for Owned.
func (c *Consumer) publishView() {
	view := make(map[string][]wire.BrokerPartition)
	for bp, byTopic := range c.owned {
		for topic := range byTopic {
			view[topic] = append(view[topic], bp)
		}
	}
	for _, ps := range view {
		slices.SortFunc(ps, wire.BrokerPartition.Compare)
	}
	c.viewMu.Lock()
	c.view = view
	c.viewMu.Unlock()
}
