package wire

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// BrokerID is a broker's configured id (server.properties brokerid), the
// name of its node under /brokers/ids in ZooKeeper.
type BrokerID int32

// NoBroker is the id of no broker: no leader (0.8's LeaderAndIsr.NoLeader).
const NoBroker BrokerID = -1

// Partition is a partition's number on a broker. Paper §3.1: a topic is
// divided into partitions, each a log of its own.
type Partition int32

// RandomPartition is the partition of a PRODUCE request that lets the broker
// choose one at random (0.7's ProducerRequest.RandomPartition).
const RandomPartition Partition = -1

// BrokerPartition names one partition of a topic on one broker (0.7's
// kafka.cluster.Partition), written "<brokerId>-<partition>" in the
// ZooKeeper registry.
type BrokerPartition struct {
	// Broker holds the partition.
	Broker BrokerID
	// Partition is its number on that broker, or RandomPartition.
	Partition Partition
}

// String is "<brokerId>-<partition>".
func (p BrokerPartition) String() string {
	return strconv.FormatInt(int64(p.Broker), 10) + "-" + strconv.FormatInt(int64(p.Partition), 10)
}

// Compare orders by broker id, then partition, numerically (0.7's
// Partition.compare, the order of a producer's partition list).
func (p BrokerPartition) Compare(q BrokerPartition) int {
	if p.Broker != q.Broker {
		return int(p.Broker) - int(q.Broker)
	}
	return int(p.Partition) - int(q.Partition)
}

// Broker is a broker's id and address, the one broker-address type of the
// tree: an element of 0.7's broker.list (id:host:port), the address part of
// a ZooKeeper registration (zkcoord.BrokerInfo embeds it), and a broker as
// METADATA answers and LEADER_AND_ISR orders name it (id, host, port on the
// wire).
type Broker struct {
	// ID is the broker's id (brokerid in its server.properties).
	ID BrokerID
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
		b := Broker{ID: BrokerID(n), Host: host, Port: p}
		if slices.ContainsFunc(out, func(o Broker) bool { return o.ID == b.ID }) {
			return nil, fmt.Errorf("broker.list names broker %d twice", b.ID)
		}
		out = append(out, b)
	}
	return out, nil
}
