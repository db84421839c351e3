package zkcoord

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/netdb11/kafka/broker/wire"
)

// This file lets consumer groups use replicated topics (0.8's layout, see
// replication.go) beside 0.7's. A replicated partition lives on several
// brokers and its leader moves, so in the group registry it is one
// partition named by its number alone, as 0.8 names it:
//
//	/consumers/<group>/owners/<topic>/<partition>   ephemeral, the owner thread id
//	/consumers/<group>/offsets/<topic>/<partition>  persistent, the offset in decimal
//
// while a 0.7 topic's partitions keep "<brokerId>-<partition>". A topic is
// either replicated or not (the brokers keep replicated topics out of 0.7's
// registry), so the two kinds of names never meet under one topic. Offsets
// are byte offsets on every replica alike (followers copy the leader's bytes
// verbatim), so a committed offset stays valid across leader changes.

// ReplicatedBroker is the Broker of a replicated topic's partition in the
// group registry's terms (wire.BrokerPartition): not a broker id, since
// the partition is fetched from whichever broker leads it.
const ReplicatedBroker wire.BrokerID = -1

// ReplicatedPartition names partition p of a replicated topic.
func ReplicatedPartition(p wire.Partition) wire.BrokerPartition {
	return wire.BrokerPartition{Broker: ReplicatedBroker, Partition: p}
}

// IsReplicated reports whether bp names a replicated topic's partition.
func IsReplicated(bp wire.BrokerPartition) bool { return bp.Broker == ReplicatedBroker }

// PartitionNodeName is a partition's node name under a group's owners and
// offsets: "<brokerId>-<partition>" (0.7), or "<partition>" for a
// replicated topic's partition (0.8).
func PartitionNodeName(bp wire.BrokerPartition) string {
	if IsReplicated(bp) {
		return strconv.FormatInt(int64(bp.Partition), 10)
	}
	return bp.String()
}

// ParsePartitionNodeName parses a name made by PartitionNodeName.
func ParsePartitionNodeName(s string) (wire.BrokerPartition, error) {
	if !strings.Contains(s, "-") {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 {
			return wire.BrokerPartition{}, fmt.Errorf("zkcoord: bad partition name %q: want <brokerId>-<partition> or <partition>", s)
		}
		return ReplicatedPartition(wire.Partition(n)), nil
	}
	return ParseBrokerPartition(s)
}

// GroupPartitionNames lists the partitions of topic that Algorithm 1 ranges
// over, as node names (PartitionNodeName): for a replicated topic, 0.8's
// partition numbers from the assignment in /brokers/topics/<topic>; for
// any other, 0.7's "<brokerId>-<partition>" registrations (PartitionNames).
// With watch, a change of the assignment, of the 0.7 registrations, or the
// topic's creation fires an event.
func (g Groups) GroupPartitionNames(topic string, watch bool) ([]string, error) {
	c := g.s
	if err := ValidateName("topic", topic); err != nil {
		return nil, err
	}
	var data []byte
	var err error
	if watch {
		data, _, err = c.WatchData(TopicPath(topic))
	} else {
		data, _, err = c.GetMaybe(TopicPath(topic))
	}
	if err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(data))) > 0 {
		a, err := ParseAssignment(data)
		if err != nil {
			c.log.Warn("ignoring bad topic assignment", "topic", topic, "err", err)
			return nil, nil
		}
		names := make([]string, 0, len(a))
		for _, p := range a.Partitions() {
			names = append(names, PartitionNodeName(ReplicatedPartition(p)))
		}
		return names, nil
	}
	return RegistryOn(c).PartitionNames(topic, watch)
}

// ErrNoLeader: a replicated partition has no leader now (none elected yet,
// or every in-sync replica is down), or its leader is not registered.
var ErrNoLeader = errors.New("zkcoord: partition has no live leader")

// PartitionLeader reads the leader of a replicated partition from its state
// node and the leader's registration. It fails with an error that
// errors.Is ErrNoLeader when there is none to fetch from.
func (g Groups) PartitionLeader(topic string, p wire.Partition) (BrokerInfo, PartitionState, error) {
	c := g.s
	st, _, ok, err := ReplicationOn(c).PartitionStateOf(topic, p)
	if err != nil {
		return BrokerInfo{}, st, err
	}
	if !ok || st.Leader == NoLeader {
		return BrokerInfo{}, st, fmt.Errorf("%w: %s-%d (no state or leader -1)", ErrNoLeader, topic, p)
	}
	info, ok, err := RegistryOn(c).Broker(st.Leader)
	if err != nil {
		return BrokerInfo{}, st, err
	}
	if !ok {
		return BrokerInfo{}, st, fmt.Errorf("%w: %s-%d: leader %d is not registered", ErrNoLeader, topic, p, st.Leader)
	}
	return info, st, nil
}
