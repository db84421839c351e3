package controller

import (
	"slices"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// reassign advances every partition reassignment asked for in
// /admin/reassign_partitions by one step, as 0.8.2 does: (1) the
// assignment grows to the new replicas followed by the old ones, with a new
// leader epoch so that the leader learns of the new followers; (2) once
// every new replica is in the ISR, (3) the leadership moves to a new
// replica if the leader is not one, and (4) the assignment shrinks to the
// new replicas, the ISR to its members among them (new epoch again), the
// dropped replicas get STOP_REPLICA, and the entry leaves the admin node.
// Every step is read back from ZooKeeper, so a controller that fails over
// midway resumes where its predecessor stopped. It returns the partitions
// whose state changed and the STOP_REPLICA orders to send.
func (c *Controller) reassign(topics map[string]zkcoord.Assignment, live map[wire.BrokerID]zkcoord.BrokerInfo) (map[wire.TopicPartition]bool, map[wire.BrokerID][]wire.TopicPartition, error) {
	moved := make(map[wire.TopicPartition]bool)
	stops := make(map[wire.BrokerID][]wire.TopicPartition)
	data, ok, err := c.zk.WatchData(zkcoord.ReassignPartitionsPath)
	if err != nil || !ok {
		return moved, stops, err
	}
	entries, err := zkcoord.ParseReassignments(data)
	if err != nil {
		c.log.Warn("controller: dropping a bad reassignment", "err", err)
		return moved, stops, c.zk.Delete(zkcoord.ReassignPartitionsPath)
	}
	log := c.log
	up := func(r wire.BrokerID) bool { _, ok := live[r]; return ok }
	var remaining []zkcoord.Reassignment
	for _, e := range entries {
		tp := wire.TopicPartition{Topic: e.Topic, Partition: e.Partition}
		a, ok := topics[e.Topic]
		if !ok || len(a[e.Partition]) == 0 || len(e.Replicas) == 0 {
			log.Warn("controller: dropping a reassignment of an unknown partition", "partition", tp.String())
			continue
		}
		cur := a[e.Partition]
		st, version, ok, err := c.state.PartitionStateOf(e.Topic, e.Partition)
		if err != nil || !ok {
			remaining = append(remaining, e)
			continue
		}
		bump := func(next zkcoord.PartitionState) bool {
			next.ControllerEpoch, next.LeaderEpoch = c.epoch, st.LeaderEpoch+1
			if _, err := c.state.WritePartitionState(e.Topic, e.Partition, next, version); err != nil {
				log.Warn("controller: reassignment step", "partition", tp.String(), "err", err)
				return false
			}
			moved[tp] = true
			return true
		}
		union := slices.Clone(e.Replicas)
		for _, r := range cur {
			if !slices.Contains(union, r) {
				union = append(union, r)
			}
		}
		switch {
		case slices.Equal(cur, e.Replicas):
			if extra := slices.DeleteFunc(slices.Clone(st.ISR), func(r wire.BrokerID) bool { return slices.Contains(e.Replicas, r) }); len(extra) > 0 {
				// Step (4) shrank the assignment but its state write
				// failed (the leader wrote its ISR meanwhile, or a broker
				// registered): finish it, or the ISR keeps replicas the
				// assignment no longer names and every order for the
				// partition is refused.
				next := st
				next.ISR = slices.DeleteFunc(slices.Clone(st.ISR), func(r wire.BrokerID) bool { return !slices.Contains(e.Replicas, r) })
				if !bump(next) {
					break
				}
				for _, r := range extra {
					if up(r) {
						stops[r] = append(stops[r], tp)
					}
				}
			}
			log.Info("controller: reassignment done", "partition", tp.String(), "replicas", e.Replicas)
			continue
		case !containsAll(cur, e.Replicas):
			a[e.Partition] = union
			if err := c.state.SetTopicAssignment(e.Topic, a); err != nil {
				return moved, stops, err
			}
			bump(st)
			log.Info("controller: reassignment: replicas added", "partition", tp.String(), "replicas", union)
		case !containsAll(st.ISR, e.Replicas):
			// Waiting for the new replicas to catch up.
		case !slices.Contains(e.Replicas, st.Leader):
			for _, r := range e.Replicas {
				if up(r) && slices.Contains(st.ISR, r) {
					next := st
					next.Leader = r
					if bump(next) {
						log.Info("controller: reassignment: leadership moved", "partition", tp.String(), "leader", r)
					}
					break
				}
			}
		default:
			a[e.Partition] = slices.Clone(e.Replicas)
			if err := c.state.SetTopicAssignment(e.Topic, a); err != nil {
				return moved, stops, err
			}
			next := st
			next.ISR = slices.DeleteFunc(slices.Clone(st.ISR), func(r wire.BrokerID) bool { return !slices.Contains(e.Replicas, r) })
			if !bump(next) {
				break
			}
			for _, r := range cur {
				if !slices.Contains(e.Replicas, r) && up(r) {
					stops[r] = append(stops[r], wire.TopicPartition{Topic: e.Topic, Partition: e.Partition})
				}
			}
			log.Info("controller: reassignment: old replicas dropped", "partition", tp.String(), "replicas", e.Replicas)
			continue
		}
		remaining = append(remaining, e)
	}
	if len(remaining) == len(entries) {
		return moved, stops, nil
	}
	if len(remaining) == 0 {
		return moved, stops, c.zk.Delete(zkcoord.ReassignPartitionsPath)
	}
	return moved, stops, c.zk.SetPersistent(zkcoord.ReassignPartitionsPath, zkcoord.MarshalReassignments(remaining))
}

func containsAll(set, xs []wire.BrokerID) bool {
	for _, x := range xs {
		if !slices.Contains(set, x) {
			return false
		}
	}
	return true
}
