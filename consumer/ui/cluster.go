package ui

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/admin"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/zkcoord"
)

// errNotFound is wrapped by errors about a topic, partition, group or
// broker the cluster does not have; the handlers answer them with 404.
var errNotFound = errors.New("not found")

// Broker is one broker as the UI shows it.
type Broker struct {
	ID wire.BrokerID
	// Addr is host:port of its Kafka protocol listener ("" if only its
	// admin endpoint is known).
	Addr string
	// Registered is true when the broker is registered in ZooKeeper.
	Registered bool
	// Admin is the base URL of its admin endpoint ("" if none known).
	Admin string
	// AdminErr says why the admin endpoint did not answer.
	AdminErr string
	// Partitions are the partitions the broker holds.
	Partitions []Partition
}

// Partition is one partition of a broker: its offsets, and its segments'
// count and size when the broker's admin endpoint is known.
type Partition struct {
	Topic     string
	Broker    wire.BrokerID
	Partition wire.Partition
	// Start, Flushed and End are the log start, the flushed end (what
	// consumers may read) and the written end. Without the admin
	// endpoint, Start and Flushed come from OFFSETS and End is Flushed.
	Start, Flushed, End wire.Offset
	// Known is false when the offsets could not be read (Err says why).
	Known bool
	Err   string
	// Segments and Bytes count its segment files (admin endpoint only).
	Segments int
	Bytes    int64
	// Detailed is true when the admin endpoint gave the details.
	Detailed bool
	// Failed, when not empty, is why the partition refuses writes (a
	// failed write or fsync; admin endpoint only).
	Failed string
	// Replica is, for a replica of a replicated topic's partition, the
	// partition's assignment and state in ZooKeeper (nil for a 0.7
	// partition). Without the admin endpoint, a leader's Start comes from
	// OFFSETS and Flushed and End are the high watermark; a follower's
	// offsets are not known (only the leader answers OFFSETS).
	Replica *Replicated
	// HW is a replicated partition's high watermark, what its consumers
	// may read up to, as its leader answers OFFSETS (HWKnown false when
	// it did not: no leader, or no answer).
	HW      wire.Offset
	HWKnown bool
}

// Name is "<broker>-<partition>", as 0.7's registry names partitions.
func (p Partition) Name() string {
	return wire.BrokerPartition{Broker: p.Broker, Partition: p.Partition}.String()
}

// cluster reads the cluster: the registry in ZooKeeper (if configured), the
// brokers' admin endpoints and, for offsets without one, the brokers
// themselves. It never writes anything.
type cluster struct {
	zk      *zkcoord.Conn // nil without --zookeeper
	static  []wire.Broker // --broker-list
	admins  []string      // base URLs of --admin endpoints
	http    *http.Client
	timeout time.Duration

	mu        sync.Mutex                          // guards consumers
	consumers map[string]*consumer.SimpleConsumer // by broker address
}

// close closes the connections to the brokers.
func (c *cluster) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, sc := range c.consumers {
		errs = append(errs, sc.Close())
	}
	c.consumers = nil
	return errors.Join(errs...)
}

// brokers returns every known broker with its partitions, by id: those
// registered in ZooKeeper, those of --broker-list and those answering on an
// --admin endpoint.
func (c *cluster) brokers(ctx context.Context) ([]*Broker, error) {
	byID := map[wire.BrokerID]*Broker{}
	get := func(id wire.BrokerID) *Broker {
		if b := byID[id]; b != nil {
			return b
		}
		b := &Broker{ID: id}
		byID[id] = b
		return b
	}
	for _, sb := range c.static {
		get(sb.ID).Addr = sb.Addr()
	}
	if c.zk != nil {
		reg, err := zkcoord.RegistryOn(c.zk).Brokers(false)
		if err != nil {
			return nil, err
		}
		for id, info := range reg {
			b := get(id)
			b.Addr, b.Registered = info.Addr(), true
		}
	}
	// The admin endpoints (--admin, and those the brokers registered in
	// ZooKeeper), in parallel.
	admins := slices.Clone(c.admins)
	if c.zk != nil {
		eps, err := zkcoord.RegistryOn(c.zk).AdminEndpoints()
		if err != nil {
			return nil, err
		}
		for _, addr := range eps {
			if base := "http://" + addr; !slices.Contains(admins, base) {
				admins = append(admins, base)
			}
		}
		slices.Sort(admins[len(c.admins):])
	}
	type answer struct {
		base string
		list admin.Partitions
		err  error
	}
	answers := make([]answer, len(admins))
	var wg sync.WaitGroup
	for i, base := range admins {
		wg.Go(func() {
			answers[i].base = base
			answers[i].err = c.getJSON(ctx, base+"/admin/partitions", &answers[i].list)
		})
	}
	wg.Wait()
	detailed := map[wire.BrokerID]bool{}
	for _, a := range answers {
		if a.err != nil {
			continue
		}
		b := get(a.list.BrokerID)
		b.Admin = a.base
		detailed[b.ID] = true
		for _, s := range a.list.Partitions {
			b.Partitions = append(b.Partitions, Partition{
				Topic: s.Topic, Broker: b.ID, Partition: s.Partition,
				Start: s.StartOffset, Flushed: s.FlushedOffset, End: s.EndOffset,
				Known: true, Segments: s.Segments, Bytes: s.Bytes, Detailed: true, Failed: s.Failed,
			})
		}
	}
	// Brokers without an admin endpoint: their registered partitions, and
	// offsets by OFFSETS; and every broker's replicas of replicated topics,
	// which are not in 0.7's registry (replicas.go).
	repl, err := c.replicatedTopics()
	if err != nil {
		return nil, err
	}
	if c.zk != nil {
		topics, err := zkcoord.RegistryOn(c.zk).Topics(false)
		if err != nil {
			return nil, err
		}
		for _, topic := range topics {
			if repl[topic] != nil {
				continue
			}
			held, err := zkcoord.RegistryOn(c.zk).TopicBrokers(topic, false)
			if err != nil {
				return nil, err
			}
			for id, n := range held {
				b := get(id)
				if detailed[id] {
					continue
				}
				for p := range n {
					b.Partitions = append(b.Partitions, Partition{Topic: topic, Broker: id, Partition: wire.Partition(p)})
				}
			}
		}
	}
	addReplicas(byID, detailed, repl)
	c.replicaOffsets(ctx, byID, detailed)
	out := make([]*Broker, 0, len(byID))
	for _, b := range byID {
		if !detailed[b.ID] && b.Addr != "" {
			for i := range b.Partitions {
				if b.Partitions[i].Replica == nil {
					c.offsets(ctx, b.Addr, &b.Partitions[i])
				}
			}
		}
		slices.SortFunc(b.Partitions, func(x, y Partition) int {
			return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
		})
		out = append(out, b)
	}
	for _, a := range answers {
		if a.err != nil {
			// An endpoint that did not answer: show it on its own.
			out = append(out, &Broker{ID: -1, Admin: a.base, AdminErr: a.err.Error()})
		}
	}
	slices.SortFunc(out, func(x, y *Broker) int { return cmp.Compare(x.ID, y.ID) })
	return out, nil
}

// offsets fills in a 0.7 partition's start and end by OFFSETS requests.
func (c *cluster) offsets(ctx context.Context, addr string, p *Partition) {
	start, err := c.offset(ctx, addr, p.Topic, p.Partition, wire.EarliestTime)
	if err == nil {
		var end wire.Offset
		if end, err = c.offset(ctx, addr, p.Topic, p.Partition, wire.LatestTime); err == nil {
			p.Start, p.Flushed, p.End, p.Known = start, end, end, true
			return
		}
	}
	p.Err = err.Error()
}

// consumer returns the connection to the broker at addr.
func (c *cluster) consumer(addr string) (*consumer.SimpleConsumer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sc := c.consumers[addr]; sc != nil {
		return sc, nil
	}
	cfg := consumer.DefaultConfig()
	cfg.SocketTimeout = c.timeout
	sc, err := consumer.NewSimpleConsumer(addr, cfg)
	if err != nil {
		return nil, err
	}
	if c.consumers == nil {
		c.consumers = map[string]*consumer.SimpleConsumer{}
	}
	c.consumers[addr] = sc
	return sc, nil
}

// getJSON GETs url and decodes its JSON answer into v.
func (c *cluster) getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%s: %w", url, errNotFound)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// partitionDetails is a broker's admin answer for one partition
// (broker/admin.Partition): its log and, for a replicated partition,
// this replica's replication state.
type partitionDetails struct {
	admin.Info
	Replication *replicaState `json:"replication"`
}

// replicaState is a replica's replication state: as the admin endpoint
// serves it (admin.Replication), or as ZooKeeper and OFFSETS give it
// (FromZK: for a replica whose broker has no admin endpoint; then LogEnd
// and Followers are not known, and HWKnown says whether the leader
// answered).
type replicaState struct {
	admin.Replication
	FromZK  bool `json:"-"`
	HWKnown bool `json:"-"`
}

// partitionInfo returns the segment details of a partition from its
// broker's admin endpoint.
func (c *cluster) partitionInfo(ctx context.Context, b *Broker, p Partition) (partitionDetails, error) {
	var d partitionDetails
	err := c.getJSON(ctx, b.Admin+"/admin/partitions/"+p.Topic+"/"+strconv.Itoa(int(p.Partition)), &d)
	return d, err
}

// Topic is one topic across the cluster.
type Topic struct {
	Name       string
	Partitions []Partition // by broker, then partition
	// Replication is the topic's replica assignment and partition states
	// when the replication layer manages it.
	Replication []Replicated
}

// UnderReplicated counts the topic's replicated partitions whose in-sync
// replica set is smaller than their replica set.
func (t *Topic) UnderReplicated() int {
	n := 0
	for _, r := range t.Replication {
		if r.HasState && len(r.ISR) < len(r.Replicas) {
			n++
		}
	}
	return n
}

// Factor is the topic's replication factor (its first partition's replica
// count), 0 for a topic the replication layer does not manage.
func (t *Topic) Factor() int {
	if len(t.Replication) == 0 {
		return 0
	}
	return len(t.Replication[0].Replicas)
}

// Replicated is one partition of a replicated topic.
type Replicated struct {
	Partition   wire.Partition
	Replicas    []wire.BrokerID
	Leader      wire.BrokerID
	LeaderEpoch int32
	ISR         []wire.BrokerID
	HasState    bool
}

// topics groups the brokers' partitions by topic, sorted by name.
func topics(brokers []*Broker) []*Topic {
	byName := map[string]*Topic{}
	for _, b := range brokers {
		for _, p := range b.Partitions {
			t := byName[p.Topic]
			if t == nil {
				t = &Topic{Name: p.Topic}
				byName[p.Topic] = t
			}
			t.Partitions = append(t.Partitions, p)
		}
	}
	out := make([]*Topic, 0, len(byName))
	for _, t := range byName {
		out = append(out, t)
	}
	slices.SortFunc(out, func(x, y *Topic) int { return cmp.Compare(x.Name, y.Name) })
	return out
}

// replication reads a replicated topic's assignment and partition states
// (nil for a topic the replication layer does not manage, or without
// ZooKeeper).
func (c *cluster) replication(topic string) ([]Replicated, error) {
	if c.zk == nil {
		return nil, nil
	}
	a, ok, err := zkcoord.ReplicationOn(c.zk).TopicAssignment(topic)
	if err != nil || !ok {
		return nil, err
	}
	out := make([]Replicated, 0, len(a))
	for p, replicas := range a {
		r := Replicated{Partition: p, Replicas: replicas}
		s, _, ok, err := zkcoord.ReplicationOn(c.zk).PartitionStateOf(topic, p)
		if err != nil {
			return nil, err
		}
		if ok {
			r.Leader, r.LeaderEpoch, r.ISR, r.HasState = s.Leader, s.LeaderEpoch, s.ISR, true
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(x, y Replicated) int { return cmp.Compare(x.Partition, y.Partition) })
	return out, nil
}
