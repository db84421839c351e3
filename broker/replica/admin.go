package replica

import (
	"fmt"
	"slices"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// AssignReplicas spreads partitions × replicationFactor replicas over
// brokers as Kafka 0.8's AdminUtils.assignReplicasToBrokers does, with its
// random start fixed at 0: partition p's first replica (its preferred
// leader) is the (p mod n)-th broker, and the others follow it at a shift
// that grows by one every n partitions, so that leaders and followers are
// both spread evenly.
func AssignReplicas(brokers []BrokerID, partitions, replicationFactor int) (zkcoord.Assignment, error) {
	n := len(brokers)
	switch {
	case partitions < 1:
		return nil, fmt.Errorf("replica: %d partitions: want at least 1", partitions)
	case replicationFactor < 1:
		return nil, fmt.Errorf("replica: replication factor %d: want at least 1", replicationFactor)
	case replicationFactor > n:
		return nil, fmt.Errorf("replica: replication factor %d is larger than the %d live brokers", replicationFactor, n)
	}
	bs := slices.Clone(brokers)
	slices.Sort(bs)
	a := make(zkcoord.Assignment, partitions)
	shift := 0
	for p := 0; p < partitions; p++ {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := p % n
		rs := []BrokerID{bs[first]}
		for j := 0; j < replicationFactor-1; j++ {
			rs = append(rs, bs[(first+1+(shift+j)%(n-1))%n])
		}
		a[wire.Partition(p)] = rs
	}
	return a, nil
}
