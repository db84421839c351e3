package zkcoord

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// Cluster is a producer's view of the brokers and of where each topic lives
// (Paper §3.2, 0.7's ZKBrokerPartitionInfo): the live brokers of
// /brokers/ids and, per topic, the sorted list of (broker, partition) pairs
// registered under /brokers/topics/<topic>. It watches both and follows
// brokers joining and leaving and topics appearing.
//
// As in 0.7, a topic nobody has registered yet is sent to partition 0 of
// every live broker, and a (broker, partition) once in a topic's list stays
// there while the broker lives, even before that broker registers the topic
// itself (it does so on its first message for it). A broker that leaves is
// dropped from every list.
type Cluster struct {
	conn *Conn
	log  *slog.Logger

	mu      sync.RWMutex
	brokers map[wire.BrokerID]BrokerInfo             // guarded by mu
	topics  map[string][]wire.BrokerPartition        // sorted, shared read-only; guarded by mu
	sticky  map[string]map[wire.BrokerPartition]bool // what a topic's list has held; guarded by mu
	known   map[string]bool                          // topics some live broker registered; guarded by mu
	changed chan struct{}                            // closed at the next change; guarded by mu

	cancel context.CancelFunc
	done   chan struct{}
}

// WatchCluster opens a session, reads the registry and keeps following it
// until Close.
func WatchCluster(ctx context.Context, cfg Config) (*Cluster, error) {
	conn, err := Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		conn:    conn,
		log:     conn.log,
		topics:  make(map[string][]wire.BrokerPartition),
		sticky:  make(map[string]map[wire.BrokerPartition]bool),
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	if err := c.refresh(); err != nil {
		return nil, errors.Join(err, conn.Close())
	}
	lctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go c.loop(lctx)
	return c, nil
}

// Partitions returns the sorted (broker, partition) list of a topic; the
// partitioner picks an index in it. For a topic without registered partitions
// it is partition 0 of every live broker (0.7's bootstrapWithExistingBrokers),
// and empty when no broker is live. The slice must not be modified.
func (c *Cluster) Partitions(topic string) []wire.BrokerPartition {
	c.mu.RLock()
	ps, ok := c.topics[topic]
	c.mu.RUnlock()
	if ok && len(ps) > 0 {
		return ps
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps := c.topics[topic]; len(ps) > 0 {
		return ps
	}
	set := make(map[wire.BrokerPartition]bool, len(c.brokers))
	for id := range c.brokers {
		set[wire.BrokerPartition{Broker: id}] = true
	}
	c.sticky[topic] = set
	ps = sortedPartitions(set)
	if len(ps) > 0 {
		c.topics[topic] = ps
		close(c.changed)
		c.changed = make(chan struct{})
	}
	return ps
}

// Registered reports whether some live broker has registered the topic.
func (c *Cluster) Registered(topic string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.known[topic]
}

// Broker returns a live broker's registration.
func (c *Cluster) Broker(id wire.BrokerID) (BrokerInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	b, ok := c.brokers[id]
	return b, ok
}

// Brokers returns the live brokers, sorted by id.
func (c *Cluster) Brokers() []BrokerInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]BrokerInfo, 0, len(c.brokers))
	for _, b := range c.brokers {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Changed returns a channel that is closed at the next change of the view
// (a registry change, or a new topic's list made by Partitions), so that an
// adapter can cache what it derives from Partitions until then.
func (c *Cluster) Changed() <-chan struct{} {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.changed
}

// Close stops watching and ends the session.
func (c *Cluster) Close() error {
	c.cancel()
	<-c.done
	return c.conn.Close()
}

func (c *Cluster) loop(ctx context.Context) {
	defer close(c.done)
	retry := time.NewTimer(retryInterval)
	retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-c.conn.Events():
			if !ok {
				return
			}
			if ev.Type == EventSessionExpired {
				continue // wait for the new session
			}
		case <-retry.C:
		}
		if err := c.refresh(); err != nil {
			c.log.Warn("reading the broker registry failed; retrying", "err", err)
			retry.Reset(retryInterval)
		}
	}
}

// refresh re-reads the registry, re-arming every watch, and publishes the
// new view.
func (c *Cluster) refresh() error {
	brokers, err := RegistryOn(c.conn).Brokers(true)
	if err != nil {
		return err
	}
	topics, err := RegistryOn(c.conn).Topics(true)
	if err != nil {
		return err
	}
	registered := make(map[string]map[wire.BrokerID]int, len(topics))
	for _, t := range topics {
		if ValidateName("topic", t) != nil {
			continue
		}
		tb, err := RegistryOn(c.conn).TopicBrokers(t, true)
		if err != nil {
			return err
		}
		registered[t] = tb
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	c.brokers = brokers
	c.known = make(map[string]bool, len(registered))
	for t, tb := range registered {
		for id, n := range tb {
			if _, live := brokers[id]; live && n > 0 {
				c.known[t] = true
			}
		}
		set := c.sticky[t]
		if set == nil {
			set = make(map[wire.BrokerPartition]bool)
			c.sticky[t] = set
		}
		for id, n := range tb {
			for p := 0; p < n; p++ {
				set[wire.BrokerPartition{Broker: id, Partition: wire.Partition(p)}] = true
			}
		}
	}
	topicsNow := make(map[string][]wire.BrokerPartition, len(c.sticky))
	for t, set := range c.sticky {
		for bp := range set {
			if _, live := brokers[bp.Broker]; !live {
				delete(set, bp)
			}
		}
		topicsNow[t] = sortedPartitions(set)
	}
	c.topics = topicsNow
	close(c.changed)
	c.changed = make(chan struct{})
	return nil
}

func sortedPartitions(set map[wire.BrokerPartition]bool) []wire.BrokerPartition {
	out := make([]wire.BrokerPartition, 0, len(set))
	for bp := range set {
		out = append(out, bp)
	}
	slices.SortFunc(out, wire.BrokerPartition.Compare)
	return out
}

// Conn returns the cluster's ZooKeeper connection, for reads the view does
// not cover (a producer asks it whether a topic has a 0.8 assignment).
func (c *Cluster) Conn() *Conn { return c.conn }
