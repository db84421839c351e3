package ui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// Group is a consumer group as the UI shows it.
type Group struct {
	Name string
	// Members are the registered consumers and their subscriptions.
	Members []Member
	// Partitions are the partitions of its topics: registered by a broker
	// or holding an offset of the group.
	Partitions []GroupPartition
	// Lag is the sum of the known lags, in bytes; Unknown counts the
	// partitions whose lag is not known (their end is not: no leader, or
	// no broker answered), which Lag leaves out.
	Lag     int64
	Unknown int
}

// Member is one consumer of a group.
type Member struct {
	ID           string
	Subscription string
}

// GroupPartition is one partition a group consumes.
type GroupPartition struct {
	Topic     string
	Partition wire.BrokerPartition
	// Name is the partition's name in the group registry:
	// "<broker>-<partition>", or the number of a replicated topic's
	// partition (zkcoord.PartitionNodeName). Page is the name of the
	// partition page to link: the same, or for a replicated partition its
	// leader's replica ("" when it has no leader now).
	Name, Page string
	// Committed is the group's committed offset (HasCommitted false if
	// none); Owner the consumer thread owning the partition ("" if none).
	Committed    wire.Offset
	HasCommitted bool
	Owner        string
	// End is what consumers may read up to: the partition's flushed end,
	// or a replicated partition's high watermark (EndKnown false if its
	// broker did not say).
	End      wire.Offset
	EndKnown bool
	// Lag is End minus Committed in bytes (HasLag false unless both are
	// known; without a committed offset the whole log is the lag).
	Lag    int64
	HasLag bool
}

// groupNames lists the consumer groups registered in ZooKeeper.
func (c *cluster) groupNames() ([]string, error) {
	if c.zk == nil {
		return nil, nil
	}
	return zkcoord.GroupsOn(c.zk).List()
}

// group reads a group: members, owners, committed offsets, and the log
// ends from ends (by topic and broker-partition), as brokers gives them.
// An unknown group wraps errNotFound.
func (c *cluster) group(name string, brokers []*Broker) (*Group, error) {
	if c.zk == nil {
		return nil, fmt.Errorf("group %q: %w (consumer groups need --zookeeper)", name, errNotFound)
	}
	if err := zkcoord.ValidateName("group", name); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotFound, err)
	}
	ok, err := c.zk.Exists(zkcoord.GroupPath(name))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("group %q: %w", name, errNotFound)
	}
	g := &Group{Name: name}
	members, err := zkcoord.GroupsOn(c.zk).GroupMembers(name, false)
	if err != nil {
		return nil, err
	}
	topicSet := map[string]bool{}
	for id, s := range members {
		g.Members = append(g.Members, Member{ID: id, Subscription: s.String()})
		for t := range s.Topics {
			topicSet[t] = true
		}
	}
	slices.SortFunc(g.Members, func(x, y Member) int { return cmp.Compare(x.ID, y.ID) })
	committedTopics, err := zkcoord.GroupsOn(c.zk).OffsetTopics(name)
	if err != nil {
		return nil, err
	}
	for _, t := range committedTopics {
		topicSet[t] = true
	}
	type key struct {
		topic string
		bp    wire.BrokerPartition
	}
	ends := map[key]Partition{}
	for _, b := range brokers {
		for _, p := range b.Partitions {
			ends[key{p.Topic, wire.BrokerPartition{Broker: p.Broker, Partition: p.Partition}}] = p
		}
	}
	topics := make([]string, 0, len(topicSet))
	for t := range topicSet {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, topic := range topics {
		set := map[wire.BrokerPartition]bool{}
		for k := range ends {
			if k.topic == topic {
				set[k.bp] = true
			}
		}
		committed, err := zkcoord.GroupsOn(c.zk).OffsetPartitions(name, topic)
		if err != nil {
			return nil, err
		}
		for _, bp := range committed {
			set[bp] = true
		}
		// A replicated topic's partition is one partition to the group,
		// read from its leader: its row takes the leader's log end, and the
		// replicas' own rows are left out.
		leaders := map[wire.BrokerPartition]wire.BrokerID{}
		if a, ok, err := zkcoord.ReplicationOn(c.zk).TopicAssignment(topic); err == nil && ok {
			for bp := range set {
				if !zkcoord.IsReplicated(bp) {
					delete(set, bp)
				}
			}
			for _, p := range a.Partitions() {
				rp := zkcoord.ReplicatedPartition(p)
				set[rp] = true
				if info, _, err := zkcoord.GroupsOn(c.zk).PartitionLeader(topic, p); err == nil {
					leaders[rp] = info.ID
					if e, ok := ends[key{topic, wire.BrokerPartition{Broker: info.ID, Partition: p}}]; ok {
						ends[key{topic, rp}] = e
					}
				}
			}
		}
		parts := make([]wire.BrokerPartition, 0, len(set))
		for bp := range set {
			parts = append(parts, bp)
		}
		slices.SortFunc(parts, wire.BrokerPartition.Compare)
		for _, bp := range parts {
			gp := GroupPartition{Topic: topic, Partition: bp, Name: zkcoord.PartitionNodeName(bp), Page: bp.String()}
			if zkcoord.IsReplicated(bp) {
				gp.Page = ""
				if l, ok := leaders[bp]; ok {
					gp.Page = wire.BrokerPartition{Broker: l, Partition: bp.Partition}.String()
				}
			}
			if gp.Committed, gp.HasCommitted, err = zkcoord.GroupsOn(c.zk).Offset(name, topic, bp); err != nil {
				return nil, err
			}
			if gp.Owner, _, err = zkcoord.GroupsOn(c.zk).PartitionOwner(name, topic, bp); err != nil {
				return nil, err
			}
			p := ends[key{topic, bp}] // zero, with nothing known, when absent
			gp.End, gp.EndKnown = p.Readable()
			from, fromKnown := p.Start, p.Known
			if gp.HasCommitted {
				from, fromKnown = gp.Committed, true
			}
			if gp.EndKnown && fromKnown {
				gp.Lag, gp.HasLag = int64(gp.End-from), true
				g.Lag += gp.Lag
			} else {
				g.Unknown++
			}
			g.Partitions = append(g.Partitions, gp)
		}
	}
	return g, nil
}

// sample is one point of a lag history.
type sample struct {
	at  time.Time
	lag int64
}

// history keeps each group's total lag, and each of its partitions' lag,
// over the last span, sampled by the UI every period.
type history struct {
	span time.Duration

	mu     sync.Mutex
	series map[string][]sample // "group" or "group\x00topic\x00b-p"; guarded by mu
}

func newHistory(span time.Duration) *history {
	return &history{span: span, series: map[string][]sample{}}
}

func seriesKey(group, topic string, bp wire.BrokerPartition) string {
	return group + "\x00" + topic + "\x00" + bp.String()
}

// record adds a group's lags at now and forgets samples older than span.
func (h *history) record(g *Group, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.addLocked(g.Name, sample{now, g.Lag})
	for _, p := range g.Partitions {
		if p.HasLag {
			h.addLocked(seriesKey(g.Name, p.Topic, p.Partition), sample{now, p.Lag})
		}
	}
	cutoff := now.Add(-h.span)
	for k, s := range h.series {
		i := 0
		for i < len(s) && s[i].at.Before(cutoff) {
			i++
		}
		if i == len(s) {
			delete(h.series, k)
		} else if i > 0 {
			h.series[k] = slices.Clone(s[i:])
		}
	}
}

func (h *history) addLocked(k string, s sample) { h.series[k] = append(h.series[k], s) }

// get returns a copy of a series.
func (h *history) get(k string) []sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.series[k])
}

// sampler records every group's lag every period until ctx ends.
func (s *Server) sampler(ctx context.Context) {
	t := time.NewTicker(s.cfg.Refresh)
	defer t.Stop()
	for {
		s.sampleOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sampleOnce records the lag of every group now.
func (s *Server) sampleOnce(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	names, err := s.cluster.groupNames()
	if err != nil || len(names) == 0 {
		if err != nil {
			s.log.Warn("sampling lag: listing groups", "err", err)
		}
		return
	}
	brokers, err := s.cluster.brokers(ctx)
	if err != nil {
		s.log.Warn("sampling lag: reading brokers", "err", err)
		return
	}
	now := time.Now()
	for _, name := range names {
		g, err := s.cluster.group(name, brokers)
		if err != nil {
			s.log.Debug("sampling lag", "group", name, "err", err)
			continue
		}
		s.history.record(g, now)
	}
}
