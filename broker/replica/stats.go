package replica

import "sync/atomic"

// stats counts the layer's events on this broker, for metrics.
type stats struct {
	isrShrinks, isrExpands atomic.Uint64 // ISR writes of this broker as leader
	leaderElections        atomic.Uint64 // new leaders chosen by this broker as controller
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
	return underReplicated, m.stats.isrShrinks.Load(), m.stats.isrExpands.Load(), m.stats.leaderElections.Load()
}
