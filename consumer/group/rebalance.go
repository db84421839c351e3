package group

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/netdb11/kafka/zkcoord"

	"github.com/netdb11/kafka/broker/wire"
)

// errConflict: a partition this consumer should own is still owned by
// another member, which has not rebalanced yet.
var errConflict = errors.New("group: partition still owned by another consumer")

// syncedRebalance is 0.7's syncedRebalance: up to rebalance.retries.max
// attempts, rebalance.backoff.ms apart, stopping the fetchers between them.
//
// Deviation: when every attempt failed, 0.7 gave up until the next change in
// ZooKeeper; the loop here tries again after rebalance.backoff.ms, so that a
// group never stays without owners.
func (c *Consumer) syncedRebalance(ctx context.Context) error {
	var err error
	for attempt := 0; attempt < c.cfg.RebalanceRetries; attempt++ {
		start := time.Now()
		if err = c.rebalance(ctx); err == nil {
			c.log.Info("rebalanced", "attempt", attempt, "took", time.Since(start), "owned", c.ownedNames())
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.log.Info("rebalance attempt failed", "attempt", attempt, "err", err)
		c.giveUp()
		t := time.NewTimer(c.cfg.RebalanceBackoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	// Hold nothing while waiting for the next try.
	c.release()
	return fmt.Errorf("group: %s can't rebalance after %d retries: %w", c.id, c.cfg.RebalanceRetries, err)
}

// rebalance is one attempt of Paper §3.2's Algorithm 1 for every topic this
// consumer subscribes to: read the group and the partitions (watching both),
// stop fetching, commit and release what it owns, compute its share, claim
// it, read the claimed partitions' offsets and start fetching.
func (c *Consumer) rebalance(ctx context.Context) error {
	members, err := zkcoord.GroupsOn(c.conn).GroupMembers(c.cfg.GroupID, true)
	if err != nil {
		return err
	}
	if _, ok := members[c.id]; !ok {
		// A failed re-registration after an expiry, or a removed group:
		// register again; the next attempt sees it.
		if err := zkcoord.GroupsOn(c.conn).RegisterConsumer(c.cfg.GroupID, c.id, c.sub); err != nil {
			return fmt.Errorf("group: consumer %s is not registered in the group: %w", c.id, err)
		}
		return fmt.Errorf("group: consumer %s was not registered in the group; registered it again", c.id)
	}
	// Wildcards resolve against /brokers/topics, watched so that a new
	// topic starts a rebalance (0.7's ZKTopicEventWatcher).
	var allTopics []string
	c.matchedKnown = false
	for _, s := range members {
		if s.IsWildcard() {
			if allTopics, err = zkcoord.RegistryOn(c.conn).Topics(true); err != nil {
				return err
			}
			c.matched, c.matchedKnown = c.matching(allTopics), true
			break
		}
	}
	threadsPerTopic := zkcoord.ThreadsPerTopic(members, allTopics)
	mine := c.sub.ThreadIDs(c.id, allTopics)
	partitionsPerTopic := make(map[string][]string, len(mine))
	for topic := range mine {
		if partitionsPerTopic[topic], err = zkcoord.GroupsOn(c.conn).GroupPartitionNames(topic, true); err != nil {
			return err
		}
	}
	brokers, err := zkcoord.RegistryOn(c.conn).Brokers(false)
	if err != nil {
		return err
	}
	if c.initialTopics == nil {
		c.initialTopics = make(map[string]bool)
		for topic, parts := range partitionsPerTopic {
			if len(parts) > 0 {
				c.initialTopics[topic] = true
			}
		}
	}

	// Fetchers must stop first: otherwise this consumer would keep
	// returning data of partitions it is about to release (duplicates).
	// From here on, a message Next returned but that was not yet marked
	// consumed (see Stream) is delivered again after the rebalance: the
	// log says so before anything of the new assignment can arrive.
	c.log.Info("rebalancing: fetchers stopped, unmarked messages will be delivered again")
	c.giveUp()
	// As 0.7, commit what was consumed before releasing, whatever
	// autocommit.enable says, so that the next owner does not deliver it
	// again. Only marked messages count (Stream.Next, Stream.Ack): with
	// ManualAck, only what the consumer acknowledged.
	if err := c.commit(); err != nil {
		c.log.Warn("commit before releasing failed", "err", err)
	}
	c.release()

	// Decide: thread -> partitions, per topic.
	type claim struct {
		topic  string
		bp     wire.BrokerPartition
		thread string
	}
	var decision []claim
	for topic, threads := range mine {
		all, parts := threadsPerTopic[topic], partitionsPerTopic[topic]
		for _, th := range threads {
			share := zkcoord.AssignThread(parts, all, th)
			if len(share) == 0 {
				c.log.Info("no partition for this consumer thread", "topic", topic, "thread", th,
					"partitions", len(parts), "threads", len(all))
			}
			for _, name := range share {
				bp, err := zkcoord.ParsePartitionNodeName(name)
				if err != nil {
					return err
				}
				decision = append(decision, claim{topic, bp, th})
			}
		}
	}

	// Claim everything or nothing.
	session := c.conn.SessionID()
	var claimed []claim
	for _, d := range decision {
		if err := zkcoord.GroupsOn(c.conn).ClaimPartition(c.cfg.GroupID, d.topic, d.bp, d.thread); err != nil {
			for _, done := range claimed {
				if rerr := zkcoord.GroupsOn(c.conn).ReleasePartition(c.cfg.GroupID, done.topic, done.bp); rerr != nil {
					err = errors.Join(err, rerr)
				}
			}
			if errors.Is(err, zkcoord.ErrPartitionOwned) {
				return fmt.Errorf("%w: %v", errConflict, err)
			}
			return err
		}
		claimed = append(claimed, d)
	}
	owned := make(map[wire.BrokerPartition]map[string]*partitionState)
	c.owned, c.ownedSession = owned, session
	gen := c.gen.Load()
	for _, d := range decision {
		ps := &partitionState{topic: d.topic, bp: d.bp, thread: d.thread, stream: c.streamFor(d.topic, d.thread), gen: gen}
		if owned[d.bp] == nil {
			owned[d.bp] = make(map[string]*partitionState)
		}
		owned[d.bp][d.topic] = ps
	}
	if c.conn.SessionID() != session {
		return fmt.Errorf("group: the session changed during the rebalance")
	}
	if err := c.initOffsets(ctx, brokers); err != nil {
		return err
	}
	c.publishView()
	return c.startFetchers(brokers)
}

// release deletes the owner nodes of every owned partition (0.7's
// releasePartitionOwnership) and forgets them.
func (c *Consumer) release() {
	for bp, byTopic := range c.owned {
		for topic := range byTopic {
			if err := zkcoord.GroupsOn(c.conn).ReleasePartition(c.cfg.GroupID, topic, bp); err != nil {
				// The session's end will delete the node anyway.
				c.log.Warn("releasing a partition failed", "topic", topic, "partition", zkcoord.PartitionNodeName(bp), "err", err)
			}
		}
	}
	c.owned = nil
	c.publishView()
}

// initOffsets sets where each owned partition starts: its committed offset,
// or autooffset.reset's earliest or latest offset from the broker. Offsets
// are read after the claims, so the previous owner's last commit is seen.
func (c *Consumer) initOffsets(ctx context.Context, brokers map[wire.BrokerID]zkcoord.BrokerInfo) error {
	conns := make(map[wire.BrokerID]Broker)
	defer func() {
		for _, b := range conns {
			if err := b.Close(); err != nil {
				c.log.Warn("closing an offsets connection", "err", err)
			}
		}
	}()
	for bp, byTopic := range c.owned {
		for topic, ps := range byTopic {
			off, ok, err := zkcoord.GroupsOn(c.conn).Offset(c.cfg.GroupID, topic, bp)
			if err != nil {
				return err
			}
			if !ok {
				start := c.cfg.startOffset()
				if !c.initialTopics[topic] {
					start = OffsetSmallest // new since the consumer started: all of it is new
				}
				if zkcoord.IsReplicated(bp) {
					// Only the leader knows the whole log, and there may be
					// none now: the partition's fetcher asks the leader it
					// finds, so that one offline partition does not hold up
					// the others.
					ps.startAt, ps.committed = start, -1
					ps.fetched.Store(-1)
					ps.consumed.Store(-1)
					continue
				}
				b, err := c.brokerConn(conns, brokers, bp.Broker)
				if err != nil {
					return err
				}
				if off, err = offsetFor(ctx, b, start, ps); err != nil {
					return fmt.Errorf("group: initial offset of %s partition %s: %w", topic, zkcoord.PartitionNodeName(bp), err)
				}
				c.log.Info("no committed offset; starting at the "+start+" offset", "topic", topic,
					"partition", zkcoord.PartitionNodeName(bp), "offset", off)
				ps.committed = -1
			} else {
				ps.committed = off
			}
			ps.fetched.Store(off)
			ps.consumed.Store(off)
		}
	}
	return nil
}

func (c *Consumer) brokerConn(conns map[wire.BrokerID]Broker, brokers map[wire.BrokerID]zkcoord.BrokerInfo, id wire.BrokerID) (Broker, error) {
	if b, ok := conns[id]; ok {
		return b, nil
	}
	info, ok := brokers[id]
	if !ok {
		return nil, fmt.Errorf("group: broker %d is not registered; cannot fetch from it", id)
	}
	b, err := c.cfg.dialBroker(info.Addr(), c.log)
	if err != nil {
		return nil, err
	}
	conns[id] = b
	return b, nil
}

// startFetchers starts one fetcher per broker holding owned partitions of
// 0.7 topics, and the leader fetchers (leaderFetchers: one per leader
// broker, found by METADATA) for the owned partitions of replicated topics.
func (c *Consumer) startFetchers(brokers map[wire.BrokerID]zkcoord.BrokerInfo) error {
	byBroker := make(map[wire.BrokerID][]*partitionState)
	var replicated []*partitionState
	for bp, byTopic := range c.owned {
		for _, ps := range byTopic {
			if zkcoord.IsReplicated(bp) {
				replicated = append(replicated, ps)
				continue
			}
			byBroker[bp.Broker] = append(byBroker[bp.Broker], ps)
		}
	}
	for id := range byBroker {
		if _, ok := brokers[id]; !ok {
			return fmt.Errorf("group: broker %d is unavailable, fetchers could not be started", id)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for id, parts := range byBroker {
		sortParts(parts)
		f := &fetcher{c: c, broker: brokers[id], parts: parts, log: c.log}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.run(ctx)
		}()
	}
	var leaders *leaderFetchers
	if len(replicated) > 0 {
		sortParts(replicated)
		leaders = c.startLeaderFetchers(ctx, replicated, brokers)
	}
	c.viewMu.Lock()
	c.leaders = leaders
	c.viewMu.Unlock()
	c.stopFetchers = func() {
		cancel()
		wg.Wait()
		if leaders != nil {
			leaders.stop()
		}
		c.viewMu.Lock()
		c.leaders = nil
		c.viewMu.Unlock()
	}
	return nil
}

// sortParts sorts partitions by topic and partition.
func sortParts(parts []*partitionState) {
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].topic != parts[j].topic {
			return parts[i].topic < parts[j].topic
		}
		return parts[i].bp.Compare(parts[j].bp) < 0
	})
}
