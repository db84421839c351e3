package producer

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// RandomPartition is the partition of a PRODUCE request that lets the broker
// choose one at random (0.7's ProducerRequest.RandomPartition).
const RandomPartition int32 = -1

// BrokerPartition is one entry of a topic's partition list: a partition on a
// broker (0.7's kafka.cluster.Partition).
type BrokerPartition struct {
	// Broker is the broker's id.
	Broker int32
	// Partition is the partition on that broker, or RandomPartition.
	Partition int32
}

// Compare orders entries by broker, then partition, as 0.7's SortedSet of
// partitions does.
func (a BrokerPartition) Compare(b BrokerPartition) int {
	if a.Broker != b.Broker {
		return int(a.Broker) - int(b.Broker)
	}
	return int(a.Partition) - int(b.Partition)
}

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
	// RandomPartition lets the broker choose.
	Partitions(topic string) []BrokerPartition
	// BrokerAddr returns the host:port of a broker.
	BrokerAddr(id int32) (addr string, ok bool)
}

// Broker is one element of a broker.list: id:host:port.
type Broker struct {
	// ID is the broker's id (brokerid in its server.properties).
	ID int32
	// Host and Port are where it listens.
	Host string
	Port int
}

// Addr returns host:port.
func (b Broker) Addr() string { return net.JoinHostPort(b.Host, strconv.Itoa(b.Port)) }

// String returns id:host:port.
func (b Broker) String() string { return fmt.Sprintf("%d:%s:%d", b.ID, b.Host, b.Port) }

// ParseBrokerList parses 0.7's broker.list, "id:host:port,id:host:port,...".
// Ids must be distinct; the host may be an IPv6 address in brackets.
func ParseBrokerList(s string) ([]Broker, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("broker.list is empty")
	}
	var out []Broker
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		id, hostPort, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("broker.list entry %q is not id:host:port", item)
		}
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("broker.list entry %q: broker id %q is not a non-negative integer", item, id)
		}
		host, port, err := net.SplitHostPort(hostPort)
		if err != nil || host == "" {
			return nil, fmt.Errorf("broker.list entry %q is not id:host:port", item)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p <= 0 || p > 65535 {
			return nil, fmt.Errorf("broker.list entry %q: port %q is not in 1..65535", item, port)
		}
		b := Broker{ID: int32(n), Host: host, Port: p}
		if slices.ContainsFunc(out, func(o Broker) bool { return o.ID == b.ID }) {
			return nil, fmt.Errorf("broker.list names broker %d twice", b.ID)
		}
		out = append(out, b)
	}
	return out, nil
}

// StaticCluster is the Cluster of a fixed broker.list (0.7's
// ConfigBrokerPartitionInfo): every topic has, on every broker, the single
// entry (id, RandomPartition), so a message goes to a broker picked at random
// and the broker picks the partition, as 0.7's configSend does.
type StaticCluster struct {
	brokers []Broker
	parts   []BrokerPartition
	addrs   map[int32]string
}

// NewStaticCluster returns the cluster of a broker.list string.
func NewStaticCluster(brokerList string) (*StaticCluster, error) {
	brokers, err := ParseBrokerList(brokerList)
	if err != nil {
		return nil, err
	}
	c := &StaticCluster{brokers: brokers, addrs: make(map[int32]string, len(brokers))}
	for _, b := range brokers {
		c.parts = append(c.parts, BrokerPartition{Broker: b.ID, Partition: RandomPartition})
		c.addrs[b.ID] = b.Addr()
	}
	slices.SortFunc(c.parts, BrokerPartition.Compare)
	return c, nil
}

// Brokers returns the parsed broker.list.
func (c *StaticCluster) Brokers() []Broker { return slices.Clone(c.brokers) }

// Partitions returns one (id, RandomPartition) entry per broker, whatever
// the topic.
func (c *StaticCluster) Partitions(string) []BrokerPartition { return c.parts }

// BrokerAddr returns the address of a broker of the list.
func (c *StaticCluster) BrokerAddr(id int32) (string, bool) {
	a, ok := c.addrs[id]
	return a, ok
}
