package ui

import (
	"context"
	"errors"
	"fmt"

	"github.com/netdb11/kafka/broker/admin"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// This file shows the replicas of replicated topics (the replication layer,
// broker/replica) on every broker that holds one, with or without an admin
// endpoint. A replicated topic is not in 0.7's registry
// (/brokers/topics/<topic>/<brokerId>), so a broker's replicas are read
// from the topic's assignment, and each partition's leader and ISR from its
// state node (/brokers/topics/<topic>/partitions/<p>/state). Offsets come
// from OFFSETS requests to the leader: only the leader answers them for a
// replicated partition, bounded at the high watermark (what consumers may
// read); a follower answers NotLeaderForPartition, so a follower's own
// offsets are known only from its admin endpoint.

// Replica roles, as Partition.Role names them.
const (
	roleLeader   = "leader"
	roleFollower = "follower"
	roleNoLeader = "no leader"
)

// Role is "leader" or "follower" for a replica of a replicated partition by
// its state in ZooKeeper, "no leader" when the partition has none, and ""
// for a 0.7 partition.
func (p Partition) Role() string {
	switch r := p.Replica; {
	case r == nil:
		return ""
	case !r.HasState || r.Leader == zkcoord.NoLeader:
		return roleNoLeader
	case r.Leader == p.Broker:
		return roleLeader
	}
	return roleFollower
}

// Readable is the offset consumers may read up to: a replicated
// partition's high watermark, or a 0.7 partition's flushed end; ok is false
// when it is not known.
func (p Partition) Readable() (end wire.Offset, ok bool) {
	if p.Replica != nil {
		return p.HW, p.HWKnown
	}
	return p.Flushed, p.Known
}

// replicatedTopics reads every replicated topic's partitions: assignment
// and state (nil without ZooKeeper).
func (c *cluster) replicatedTopics() (map[string][]Replicated, error) {
	if c.zk == nil {
		return nil, nil
	}
	topics, err := zkcoord.ReplicationOn(c.zk).ReplicatedTopics()
	if err != nil {
		return nil, err
	}
	out := make(map[string][]Replicated, len(topics))
	for t := range topics {
		if out[t], err = c.replication(t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// addReplicas adds the replicas of the replicated topics to the brokers: to
// a broker without an admin endpoint (detailed false) every replica the
// assignment gives it; to one with an endpoint, the replication state of
// the partitions it listed. Brokers not in byID (neither registered nor
// given) are left out: nothing is known of them.
func addReplicas(byID map[wire.BrokerID]*Broker, detailed map[wire.BrokerID]bool, repl map[string][]Replicated) {
	for _, b := range byID {
		if !detailed[b.ID] {
			continue
		}
		for i := range b.Partitions {
			p := &b.Partitions[i]
			for j := range repl[p.Topic] {
				if r := &repl[p.Topic][j]; r.Partition == p.Partition {
					p.Replica = r
				}
			}
		}
	}
	for topic, parts := range repl {
		for i := range parts {
			r := &parts[i]
			for _, id := range r.Replicas {
				if b := byID[id]; b != nil && !detailed[id] {
					b.Partitions = append(b.Partitions, Partition{Topic: topic, Broker: id, Partition: r.Partition, Replica: r})
				}
			}
		}
	}
}

// replicaOffsets fills in the replicated partitions' offsets: each
// partition's high watermark on every replica, by OFFSETS to its leader;
// and, on a broker without an admin endpoint, the leader's log start by
// OFFSETS, with the high watermark as the end consumers may read (the
// written end is not known).
func (c *cluster) replicaOffsets(ctx context.Context, byID map[wire.BrokerID]*Broker, detailed map[wire.BrokerID]bool) {
	type key struct {
		topic string
		p     wire.Partition
	}
	type answer struct {
		hw  wire.Offset
		err error
	}
	hws := map[key]answer{}
	hw := func(p *Partition) answer {
		k := key{p.Topic, p.Partition}
		if a, ok := hws[k]; ok {
			return a
		}
		var a answer
		if l := byID[p.Replica.Leader]; p.Role() == roleNoLeader {
			a.err = fmt.Errorf("no leader (ISR %s)", idList(p.Replica.ISR))
		} else if l == nil || l.Addr == "" {
			a.err = fmt.Errorf("leader %d is not registered", p.Replica.Leader)
		} else {
			a.hw, a.err = c.offset(ctx, l.Addr, p.Topic, p.Partition, wire.LatestTime)
		}
		hws[k] = a
		return a
	}
	for _, b := range byID {
		for i := range b.Partitions {
			p := &b.Partitions[i]
			if p.Replica == nil {
				continue
			}
			a := hw(p)
			p.HW, p.HWKnown = a.hw, a.err == nil
			if detailed[b.ID] {
				continue
			}
			switch {
			case a.err != nil:
				p.Err = a.err.Error()
			case p.Role() == roleLeader:
				start, err := c.offset(ctx, b.Addr, p.Topic, p.Partition, wire.EarliestTime)
				if err != nil {
					p.Err = err.Error()
					continue
				}
				p.Start, p.Flushed, p.End, p.Known = start, a.hw, a.hw, true
			}
		}
	}
}

// offset asks the broker at addr for one offset of a partition (time
// wire.EarliestTime or wire.LatestTime).
func (c *cluster) offset(ctx context.Context, addr, topic string, p wire.Partition, time int64) (wire.Offset, error) {
	sc, err := c.consumer(addr)
	if err != nil {
		return 0, err
	}
	offs, err := sc.OffsetsBefore(ctx, topic, p, time, 1)
	if err != nil {
		return 0, err
	}
	if len(offs) != 1 {
		return 0, errors.New("the broker answered no offset")
	}
	return offs[0], nil
}

// zkReplicaState is a replica's replication state as ZooKeeper and its
// leader's OFFSETS answer give it, for a replica whose broker's admin
// endpoint did not: no log end, no followers.
func zkReplicaState(p Partition) *replicaState {
	r := p.Replica
	s := &replicaState{Replication: admin.Replication{Leader: r.Leader, LeaderEpoch: r.LeaderEpoch, Replicas: r.Replicas,
		ISR: r.ISR, HighWatermark: p.HW}, HWKnown: p.HWKnown, FromZK: true}
	if role := p.Role(); role != roleNoLeader {
		s.Role = role
	}
	return s
}
