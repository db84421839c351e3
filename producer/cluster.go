package producer

import (
	"slices"

	"github.com/netdb11/kafka/broker/wire"
)

// Cluster tells the producer where a topic's partitions are (0.7's
// BrokerPartitionInfo). StaticCluster serves a fixed broker.list; the
// ZooKeeper registry (zk.connect) is another implementation.
//
// The producer calls both methods on every Send, from many goroutines: they
// must be safe for concurrent use, fast, and should not allocate.
type Cluster interface {
	// Partitions returns the topic's partitions sorted by (broker,
	// partition). The producer does not modify the slice. An empty list
	// makes Send fail with ErrNoBrokers. An entry whose Partition is
	// wire.RandomPartition lets the broker choose.
	Partitions(topic string) []wire.BrokerPartition
	// BrokerAddr returns the host:port of a broker.
	BrokerAddr(id wire.BrokerID) (addr string, ok bool)
}

// StaticCluster is the Cluster of a fixed broker.list (0.7's
// ConfigBrokerPartitionInfo): every topic has, on every broker, the single
// entry (id, wire.RandomPartition), so a message goes to a broker picked at random
// and the broker picks the partition, as 0.7's configSend does.
type StaticCluster struct {
	brokers []wire.Broker
	parts   []wire.BrokerPartition
	addrs   map[wire.BrokerID]string
}

// NewStaticCluster returns the cluster of a broker.list string.
func NewStaticCluster(brokerList string) (*StaticCluster, error) {
	brokers, err := wire.ParseBrokerList(brokerList)
	if err != nil {
		return nil, err
	}
	c := &StaticCluster{brokers: brokers, addrs: make(map[wire.BrokerID]string, len(brokers))}
	for _, b := range brokers {
		c.parts = append(c.parts, wire.BrokerPartition{Broker: b.ID, Partition: wire.RandomPartition})
		c.addrs[b.ID] = b.Addr()
	}
	slices.SortFunc(c.parts, wire.BrokerPartition.Compare)
	return c, nil
}

// Brokers returns the parsed broker.list.
func (c *StaticCluster) Brokers() []wire.Broker { return slices.Clone(c.brokers) }

// Partitions returns one (id, wire.RandomPartition) entry per broker, whatever
// the topic.
func (c *StaticCluster) Partitions(string) []wire.BrokerPartition { return c.parts }

// BrokerAddr returns the address of a broker of the list.
func (c *StaticCluster) BrokerAddr(id wire.BrokerID) (string, bool) {
	a, ok := c.addrs[id]
	return a, ok
}
