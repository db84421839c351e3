package replica

import (
	"slices"
	"sync/atomic"

	"github.com/netdb11/kafka/broker/admin"
	"github.com/netdb11/kafka/broker/wire"
)

// stats counts the layer's events on this broker, for metrics.
type stats struct {
	isrShrinks, isrExpands atomic.Uint64 // ISR writes of this broker as leader
	suspensions            atomic.Uint64 // leaderships suspended as perhaps deposed (rule 6)
	// Replica fetches this broker answered as leader, how many of them
	// waited for an append (long poll), and the bytes they sent; the
	// benchmarks report them per produce request.
	fetches, fetchWaits, fetchBytes atomic.Uint64
}

// ReplicationStats reports, for metrics (broker/metrics reads it through an
// interface of its own, so this package does not import it): how many
// partitions this broker leads whose in-sync replica set is smaller than
// their replica set, and how many times, since the layer started, it shrank
// or expanded an ISR as leader and elected a leader as controller (a failed
// leader replaced, or the preferred replica restored).
func (m *Manager) ReplicationStats() (underReplicated int, isrShrinks, isrExpands, leaderElections uint64) {
	for _, p := range m.partitions() {
		lead := p.leaderState()
		if lead == nil {
			continue
		}
		p.mu.Lock()
		replicas := len(p.replicas)
		p.mu.Unlock()
		if len(lead.ISR()) < replicas {
			underReplicated++
		}
	}
	isrShrinks, isrExpands = m.stats.isrShrinks.Load(), m.stats.isrExpands.Load()
	if m.cfg.Candidate != nil {
		elections, shrinks := m.cfg.Candidate.Stats()
		leaderElections, isrShrinks = elections, isrShrinks+shrinks
	}
	return underReplicated, isrShrinks, isrExpands, leaderElections
}

// ReplicaInfo returns the replication state of a partition this broker
// holds as a replica (ok false otherwise), as the admin endpoint serves it.
func (m *Manager) ReplicaInfo(topic string, partition wire.Partition) (*admin.Replication, bool) {
	m.mu.Lock()
	p := m.parts[partKey{topic, partition}]
	m.mu.Unlock()
	if p == nil {
		return nil, false
	}
	p.mu.Lock()
	pi := &admin.Replication{Leader: p.leader, LeaderEpoch: p.leaderEpoch, Replicas: slices.Clone(p.replicas), HighWatermark: p.hw}
	lead := p.lead
	switch {
	case lead != nil:
		pi.Role = "leader"
	case p.fetch != nil:
		pi.Role = "follower"
	}
	p.mu.Unlock()
	pi.LogEnd = p.log.WrittenEnd()
	if lead != nil {
		pi.HighWatermark, pi.ISR = lead.HW(), lead.ISR()
		leo := lead.LEO()
		for _, r := range pi.Replicas {
			if r == m.cfg.BrokerID {
				continue
			}
			f := admin.Follower{ID: r, LogEnd: lead.FollowerLEO(r)}
			if f.LogEnd >= 0 {
				f.Lag = int64(leo - f.LogEnd)
			}
			pi.Followers = append(pi.Followers, f)
		}
	}
	return pi, true
}
