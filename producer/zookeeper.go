package producer

import (
	"context"

	"github.com/netdb11/kafka/zkcoord"

	"github.com/netdb11/kafka/broker/wire"
)

// ZooKeeperCluster is the Cluster of a producer configured with zk.connect
// (0.7's ZKBrokerPartitionInfo): it follows the broker and topic registries,
// so brokers joining or leaving and topics appearing change where messages
// go. Paper §3.2: producers discover brokers through ZooKeeper, with no
// master in between.
type ZooKeeperCluster struct {
	zc *zkcoord.Cluster
}

// NewZooKeeperCluster opens a ZooKeeper session and starts following the
// registry. Close it when done.
func NewZooKeeperCluster(ctx context.Context, cfg zkcoord.Config) (*ZooKeeperCluster, error) {
	zc, err := zkcoord.WatchCluster(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &ZooKeeperCluster{zc: zc}, nil
}

// Partitions returns the topic's sorted (broker, partition) list; for a
// topic no broker has registered yet, partition 0 of every live broker.
func (c *ZooKeeperCluster) Partitions(topic string) []wire.BrokerPartition {
	return c.zc.Partitions(topic)
}

// BrokerAddr returns a live broker's host:port.
func (c *ZooKeeperCluster) BrokerAddr(id wire.BrokerID) (string, bool) {
	b, ok := c.zc.Broker(id)
	if !ok {
		return "", false
	}
	return b.Addr(), true
}

// Close stops following the registry and ends the session.
func (c *ZooKeeperCluster) Close() error { return c.zc.Close() }

// Brokers returns the live brokers of /brokers/ids, sorted by id: the
// brokers an acknowledged producer asks for metadata (0.8 bootstraps from
// broker.list; with zk.connect, from the registry).
func (c *ZooKeeperCluster) Brokers() []wire.Broker {
	infos := c.zc.Brokers()
	out := make([]wire.Broker, len(infos))
	for i, b := range infos {
		out[i] = b.Broker
	}
	return out
}

// Replicated reports whether the topic has a replica assignment (0.8's
// layout: JSON partitions in /brokers/topics/<topic>): such a topic is
// produced to its partitions' leaders, whatever request.required.acks.
func (c *ZooKeeperCluster) Replicated(topic string) (bool, error) {
	_, ok, err := zkcoord.ReplicationOn(c.zc.Conn()).TopicAssignment(topic)
	return ok, err
}
