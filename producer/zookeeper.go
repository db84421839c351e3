package producer

import (
	"context"
	"sync"

	"github.com/netdb11/kafka/zkcoord"
)

// ZooKeeperCluster is the Cluster of a producer configured with zk.connect
// (0.7's ZKBrokerPartitionInfo): it follows the broker and topic registries,
// so brokers joining or leaving and topics appearing change where messages
// go. Paper §3.2: producers discover brokers through ZooKeeper, with no
// master in between.
type ZooKeeperCluster struct {
	zc *zkcoord.Cluster

	mu    sync.RWMutex
	cache map[string]zkEntry // topic -> converted list; guarded by mu
}

// zkEntry caches the conversion of one registry list, keyed by the identity
// of the list it came from (the registry replaces lists, never edits them).
type zkEntry struct {
	from []zkcoord.BrokerPartition
	to   []BrokerPartition
}

// NewZooKeeperCluster opens a ZooKeeper session and starts following the
// registry. Close it when done.
func NewZooKeeperCluster(ctx context.Context, cfg zkcoord.Config) (*ZooKeeperCluster, error) {
	zc, err := zkcoord.WatchCluster(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &ZooKeeperCluster{zc: zc, cache: map[string]zkEntry{}}, nil
}

// Partitions returns the topic's sorted (broker, partition) list; for a
// topic no broker has registered yet, partition 0 of every live broker.
func (c *ZooKeeperCluster) Partitions(topic string) []BrokerPartition {
	from := c.zc.Partitions(topic)
	c.mu.RLock()
	e, ok := c.cache[topic]
	c.mu.RUnlock()
	if ok && sameList(e.from, from) {
		return e.to
	}
	to := make([]BrokerPartition, len(from))
	for i, p := range from {
		to[i] = BrokerPartition{Broker: int32(p.Broker), Partition: p.Partition}
	}
	c.mu.Lock()
	c.cache[topic] = zkEntry{from: from, to: to}
	c.mu.Unlock()
	return to
}

// sameList reports whether a and b are the same slice (not merely equal).
func sameList(a, b []zkcoord.BrokerPartition) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// BrokerAddr returns a live broker's host:port.
func (c *ZooKeeperCluster) BrokerAddr(id int32) (string, bool) {
	b, ok := c.zc.Broker(zkcoord.BrokerID(id))
	if !ok {
		return "", false
	}
	return b.Addr(), true
}

// Close stops following the registry and ends the session.
func (c *ZooKeeperCluster) Close() error { return c.zc.Close() }
