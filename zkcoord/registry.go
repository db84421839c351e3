package zkcoord

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/netdb11/kafka/broker/wire"
)

// Registry is the 0.7 broker and topic registry on a session (Paper §3.2,
// 0.7's ZkUtils.getCluster and getPartitionsForTopics): what producers,
// consumers and tools read to find the brokers and the partitions of a
// topic. A broker writes its own entries through BrokerRegistration. Make
// one with RegistryOn.
type Registry struct{ s *Conn }

// RegistryOn returns the 0.7 registry role on session s.
func RegistryOn(s *Conn) Registry { return Registry{s: s} }

// This file reads the broker and topic registry. A node listed as a child can
// vanish before it is read (an ephemeral node whose session just ended); such
// a node is skipped, as the registry no longer holds it. A value that does
// not parse is skipped and logged, so that one bad entry written by some
// other tool cannot stop producers and consumers.

// Brokers reads /brokers/ids: the live brokers (0.7's ZkUtils.getCluster).
// With watch, a change of the broker list fires an EventChildren.
func (r Registry) Brokers(watch bool) (map[wire.BrokerID]BrokerInfo, error) {
	c := r.s
	names, err := c.children(BrokerIDsPath, watch)
	if err != nil {
		return nil, err
	}
	out := make(map[wire.BrokerID]BrokerInfo, len(names))
	for _, n := range names {
		id, err := ParseBrokerID(n)
		if err != nil {
			c.log.Warn("ignoring bad broker registration", "path", BrokerIDsPath+"/"+n, "err", err)
			continue
		}
		data, ok, err := c.GetMaybe(BrokerPath(id))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		info, err := ParseBrokerInfo(id, string(data))
		if err != nil {
			c.log.Warn("ignoring bad broker registration", "path", BrokerPath(id), "err", err)
			continue
		}
		out[id] = info
	}
	return out, nil
}

// Broker reads one broker's registration; ok is false when it is not live.
func (r Registry) Broker(id wire.BrokerID) (info BrokerInfo, ok bool, err error) {
	c := r.s
	data, ok, err := c.GetMaybe(BrokerPath(id))
	if err != nil || !ok {
		return BrokerInfo{}, false, err
	}
	info, err = ParseBrokerInfo(id, string(data))
	return info, err == nil, err
}

// InterBrokerEndpoint reads /brokers/interbroker/<id>: the host:port of
// broker id's inter-broker listener, split; ok is false when it has none
// (a value that does not parse is logged and counts as none).
func (r Registry) InterBrokerEndpoint(id wire.BrokerID) (host string, port int, ok bool, err error) {
	c := r.s
	data, ok, err := c.GetMaybe(InterBrokerEndpointPath(id))
	if err != nil || !ok {
		return "", 0, false, err
	}
	h, p, serr := net.SplitHostPort(string(data))
	n, perr := strconv.Atoi(p)
	if serr != nil || perr != nil || h == "" || n < 1 || n > 65535 {
		c.log.Warn("ignoring a bad inter-broker endpoint", "path", InterBrokerEndpointPath(id), "value", string(data))
		return "", 0, false, nil
	}
	return h, n, true, nil
}

// Topics reads the children of /brokers/topics, sorted.
func (r Registry) Topics(watch bool) ([]string, error) {
	c := r.s
	names, err := c.children(BrokerTopicsPath, watch)
	sort.Strings(names)
	return names, err
}

// TopicBrokers reads /brokers/topics/<topic>: the number of partitions each
// broker registered for the topic. With watch, a broker registering or
// dropping the topic fires an EventChildren (EventCreated if the topic is new).
func (r Registry) TopicBrokers(topic string, watch bool) (map[wire.BrokerID]int, error) {
	c := r.s
	if err := ValidateName("topic", topic); err != nil {
		return nil, err
	}
	names, err := c.children(TopicPath(topic), watch)
	if err != nil {
		return nil, err
	}
	out := make(map[wire.BrokerID]int, len(names))
	for _, n := range names {
		if n == partitionsChild {
			continue // 0.8's partition states, see replication.go
		}
		id, err := ParseBrokerID(n)
		if err != nil {
			c.log.Warn("ignoring bad topic registration", "path", TopicPath(topic)+"/"+n, "err", err)
			continue
		}
		data, ok, err := c.GetMaybe(TopicBrokerPath(topic, id))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		count, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || count < 0 {
			c.log.Warn("ignoring bad topic registration", "path", TopicBrokerPath(topic, id),
				"value", string(data), "err", "want a partition count in decimal")
			continue
		}
		out[id] = count
	}
	return out, nil
}

// PartitionNames is 0.7's getPartitionsForTopics for one topic: every
// "<brokerId>-<partition>" registered under /brokers/topics/<topic>, sorted
// lexicographically as strings (the order Algorithm 1 ranges over).
func (r Registry) PartitionNames(topic string, watch bool) ([]string, error) {
	c := r.s
	brokers, err := RegistryOn(c).TopicBrokers(topic, watch)
	if err != nil {
		return nil, err
	}
	return PartitionNames(brokers), nil
}

// PartitionNames lists "<brokerId>-<partition>" for every partition of the
// given brokers' partition counts, sorted lexicographically.
func PartitionNames(brokers map[wire.BrokerID]int) []string {
	var out []string
	for id, n := range brokers {
		for p := 0; p < n; p++ {
			out = append(out, wire.BrokerPartition{Broker: id, Partition: wire.Partition(p)}.String())
		}
	}
	sort.Strings(out)
	return out
}

// AdminEndpoints reads /brokers/admin: the host:port of each registered
// broker's HTTP listener (metrics.listen), by broker id. Children that are
// not broker ids are skipped.
func (r Registry) AdminEndpoints() (map[wire.BrokerID]string, error) {
	c := r.s
	names, err := c.Children(BrokerAdminPath)
	if err != nil {
		return nil, err
	}
	out := make(map[wire.BrokerID]string, len(names))
	for _, name := range names {
		id, err := strconv.ParseInt(name, 10, 32)
		if err != nil || id < 0 {
			continue
		}
		data, ok, err := c.GetMaybe(BrokerAdminEndpointPath(wire.BrokerID(id)))
		if err != nil {
			return nil, err
		}
		if ok {
			out[wire.BrokerID(id)] = string(data)
		}
	}
	return out, nil
}

func (c *Conn) children(p string, watch bool) ([]string, error) {
	if watch {
		return c.WatchChildren(p)
	}
	return c.Children(p)
}

// ErrPartitionOwned: another consumer thread owns the partition.
var ErrPartitionOwned = errors.New("zkcoord: partition owned by another consumer")

// OwnedError reports the owner of a partition that could not be claimed.
type OwnedError struct {
	// Group, Topic and Partition name the partition.
	Group, Topic string
	Partition    wire.BrokerPartition
	// Owner is the owning thread id, the value of the owner node.
	Owner string
}

// Error names the partition and its owner.
func (e *OwnedError) Error() string {
	return fmt.Sprintf("zkcoord: group %s topic %s partition %s is owned by %s", e.Group, e.Topic, e.Partition, e.Owner)
}

// Is makes errors.Is(err, ErrPartitionOwned) true.
func (e *OwnedError) Is(target error) bool { return target == ErrPartitionOwned }
