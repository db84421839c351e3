package group

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/zkcoord"
)

// This file tests the leader fetchers (issue 25 item 6): replicated
// partitions fetched as Kafka 0.8 fetches them, one fetcher and one
// connection per leader broker, leaders found by METADATA.

// sizedPayloads returns n payloads of partition p whose sizes run from 1
// byte to 10 KiB (several of each around the edges), the first bytes
// telling them apart where they are long enough.
func sizedPayloads(p wire.Partition, from, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		k := from + i
		size := 1 + (k*7919)%(10<<10)
		if k%5 == 0 {
			size = 1 + k%3 // 1 to 3 bytes
		}
		b := bytes.Repeat([]byte{byte('a' + k%26)}, size)
		copy(b, fmt.Sprintf("%d-%d-", p, k))
		out[i] = b
	}
	return out
}

// partitionLog is what each replicated partition should deliver: the
// payload ending at each offset (NextOffset), in order.
type partitionLog struct {
	ends     []wire.Offset
	payloads map[wire.Offset][]byte
}

func (pl *partitionLog) add(ms [][]byte) {
	if pl.payloads == nil {
		pl.payloads = make(map[wire.Offset][]byte)
	}
	var end wire.Offset
	if len(pl.ends) > 0 {
		end = pl.ends[len(pl.ends)-1]
	}
	for _, m := range ms {
		end += wire.Offset(len(wire.AppendMessage(nil, m)))
		pl.ends = append(pl.ends, end)
		pl.payloads[end] = m
	}
}

// offsetCollector records the messages a group delivers by partition and
// NextOffset, so that equal payloads (1-byte messages) stay apart.
type offsetCollector struct {
	mu   sync.Mutex
	got  map[wire.Partition]map[wire.Offset]int // deliveries
	bad  []string
	want map[wire.Partition]*partitionLog
}

func (c *offsetCollector) add(m Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := m.Partition.Partition
	if c.got[p] == nil {
		c.got[p] = make(map[wire.Offset]int)
	}
	c.got[p][m.NextOffset]++
	if w, ok := c.want[p].payloads[m.NextOffset]; !ok || !bytes.Equal(w, m.Payload) {
		c.bad = append(c.bad, fmt.Sprintf("partition %d offset %d: %d bytes, not the message written there", p, m.NextOffset, len(m.Payload)))
	}
}

// check reports missing messages, duplicate deliveries and wrong ones.
func (c *offsetCollector) check() (missing, dups int, bad []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, pl := range c.want {
		for _, end := range pl.ends {
			switch n := c.got[p][end]; {
			case n == 0:
				missing++
			case n > 1:
				dups += n - 1
			}
		}
	}
	return missing, dups, slices.Clone(c.bad)
}

// connTracker wraps the group's broker connections and records the most
// connections open at once to each broker.
type connTracker struct {
	mu   sync.Mutex
	open map[string]int
	max  map[string]int
}

func (t *connTracker) dial(addr string) (Broker, error) {
	sc, err := consumer.NewSimpleConsumer(addr, consumer.DefaultConfig())
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open[addr]++
	t.max[addr] = max(t.max[addr], t.open[addr])
	return &trackedConn{SimpleConsumer: sc, t: t}, nil
}

type trackedConn struct {
	*consumer.SimpleConsumer
	t    *connTracker
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.t.mu.Lock()
		c.t.open[c.Addr()]--
		c.t.mu.Unlock()
	})
	return c.SimpleConsumer.Close()
}

// leaderFetchEnv starts three brokers with the replication layer, a
// 16-partition topic r with rf replicas each, and writes n messages of
// 1 B to 10 KiB to each partition; it returns what each partition holds.
func (e *env) leaderFetchEnv(rf, n int) (ids []wire.BrokerID, want map[wire.Partition]*partitionLog) {
	ids = []wire.BrokerID{0, 1, 2}
	for _, id := range ids {
		e.startReplicaBroker(id)
	}
	e.createReplicated2("r", 16, ids, rf)
	want = make(map[wire.Partition]*partitionLog)
	for p := wire.Partition(0); p < 16; p++ {
		ms := sizedPayloads(p, 0, n)
		want[p] = &partitionLog{}
		want[p].add(ms)
		e.produceAcks("r", p, ms)
	}
	return ids, want
}

// leaderAddrs returns the address of each partition's leader now.
func (e *env) leaderAddrs(topic string, n int) map[wire.Partition]string {
	e.t.Helper()
	out := make(map[wire.Partition]string)
	for p := wire.Partition(0); p < wire.Partition(n); p++ {
		info, _, err := zkcoord.GroupsOn(e.obs).PartitionLeader(topic, p)
		if err != nil {
			e.t.Fatal(err)
		}
		out[p] = info.Addr()
	}
	return out
}

// TestGroupFetchesByLeader: a group consumer of a 16-partition RF=2 topic
// on three brokers fetches each partition from its leader with one fetcher
// and one connection per broker (before, it opened one connection per
// partition: 16, and polled ZooKeeper for each idle partition every
// second), and delivers every message, of sizes from 1 B to 10 KiB,
// exactly once and in place.
func TestGroupFetchesByLeader(t *testing.T) {
	e := newEnv(t)
	_, want := e.leaderFetchEnv(2, 60)
	cfg := e.consumerConfig("g")
	cfg.FetchSize = 32 << 10 // several rounds per partition
	tr := &connTracker{open: map[string]int{}, max: map[string]int{}}
	cfg.DialBroker = tr.dial
	c := e.start(cfg, map[string]int{"r": 2})
	col := &offsetCollector{got: map[wire.Partition]map[wire.Offset]int{}, want: want}
	readStreams(t, c, c.Streams("r"), col.add)
	e.waitFor("every message of the 16 partitions", func() bool {
		missing, _, _ := col.check()
		return missing == 0
	})
	if _, dups, bad := col.check(); dups != 0 || len(bad) != 0 {
		t.Fatalf("%d duplicates; wrong messages: %v", dups, bad)
	}
	leaders := e.leaderAddrs("r", 16)
	c.viewMu.Lock()
	from, conns := c.leaders.fetchingFrom()["r"], c.leaders.openConns()
	c.viewMu.Unlock()
	for p, addr := range leaders {
		if from[p] != addr {
			t.Errorf("partition %d fetched from %q, its leader is %s", p, from[p], addr)
		}
	}
	distinct := slices.Sorted(func(yield func(string) bool) {
		seen := map[string]bool{}
		for _, a := range leaders {
			if !seen[a] && !yield(a) {
				return
			}
			seen[a] = true
		}
	})
	// One per leader, and perhaps the one the leader finder asked
	// METADATA on, to a broker that leads nothing.
	if len(conns) > 3 || len(conns) > len(distinct)+1 || !isSubset(distinct, conns) {
		t.Errorf("open connections %v, want one per leader %v", conns, distinct)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for addr, n := range tr.max {
		if n > 1 {
			t.Errorf("%d connections open at once to %s, want one", n, addr)
		}
	}
}

// isSubset reports whether every element of sub is in set.
func isSubset(sub, set []string) bool {
	for _, s := range sub {
		if !slices.Contains(set, s) {
			return false
		}
	}
	return true
}

// TestGroupFollowsLeadersWhenABrokerStops: a broker leading several of the
// 16 partitions (RF=3) stops while the group consumer is in the middle of
// them; the fetchers give its partitions to the leader finder, which finds
// the new leaders by METADATA and hands them to the other brokers'
// fetchers, each continuing from its own position: every message, before
// and after the failover (the later ones only the new leaders have), is
// delivered once.
func TestGroupFollowsLeadersWhenABrokerStops(t *testing.T) {
	e := newEnv(t)
	_, want := e.leaderFetchEnv(3, 40)
	cfg := e.consumerConfig("g")
	cfg.FetchSize = 16 << 10 // small fetches (one 10 KiB message fits), few queued: most is fetched after the failover
	cfg.QueuedChunks = 1
	c := e.start(cfg, map[string]int{"r": 1})
	s := c.Streams("r")[0]
	col := &offsetCollector{got: map[wire.Partition]map[wire.Offset]int{}, want: want}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for range 50 {
		m, err := s.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		col.add(m)
	}
	old := e.leader("r", 0)
	stoppedAddr := e.leaderAddrs("r", 1)[0]
	e.stopBroker(old)
	e.waitFor("new leaders for the stopped broker's partitions", func() bool {
		for p := wire.Partition(0); p < 16; p++ {
			if info, _, err := zkcoord.GroupsOn(e.obs).PartitionLeader("r", p); err != nil || info.ID == old {
				return false
			}
		}
		return true
	})
	for p := wire.Partition(0); p < 16; p++ {
		ms := sizedPayloads(p, 40, 20) // only the new leaders have these
		col.mu.Lock()
		want[p].add(ms)
		col.mu.Unlock()
		e.produceAcks("r", p, ms)
	}
	for {
		if missing, _, _ := col.check(); missing == 0 {
			break
		}
		m, err := s.Next(ctx)
		if err != nil {
			missing, _, _ := col.check()
			t.Fatalf("after the failover: %v (%d missing)", err, missing)
		}
		col.add(m)
	}
	if _, dups, bad := col.check(); dups != 0 || len(bad) != 0 {
		t.Fatalf("%d duplicates; wrong messages: %v", dups, bad)
	}
	e.waitFor("every partition fetched from its new leader", func() bool {
		leaders := e.leaderAddrs("r", 16)
		c.viewMu.Lock()
		defer c.viewMu.Unlock()
		if c.leaders == nil {
			return false
		}
		from := c.leaders.fetchingFrom()["r"]
		for p, addr := range leaders {
			if from[p] != addr {
				return false
			}
		}
		conns := c.leaders.openConns()
		return len(conns) <= 2 && !slices.Contains(conns, stoppedAddr)
	})
}

// TestGroupLeavesADeposedLeader: a broker leading partitions of an RF=3
// topic leaves the cluster (its registration ends) but keeps serving, so a
// fetch from it is not refused; the group consumer, caught up, learns from
// METADATA that the leaders moved (the idle recheck, leaderRecheck) and
// reads the messages written afterwards, which only the new leaders have,
// once each.
func TestGroupLeavesADeposedLeader(t *testing.T) {
	e := newEnv(t)
	ids := []wire.BrokerID{0, 1, 2}
	for _, id := range ids {
		e.startReplicaBroker(id)
	}
	e.createReplicated("r", 4, ids)
	want := make(map[wire.Partition]*partitionLog)
	for p := wire.Partition(0); p < 4; p++ {
		ms := sizedPayloads(p, 0, 30)
		want[p] = &partitionLog{}
		want[p].add(ms)
		e.produceAcks("r", p, ms)
	}
	c := e.start(e.consumerConfig("g"), map[string]int{"r": 1})
	col := &offsetCollector{got: map[wire.Partition]map[wire.Offset]int{}, want: want}
	readStreams(t, c, c.Streams("r"), col.add)
	e.waitFor("every message written before", func() bool {
		missing, _, _ := col.check()
		return missing == 0
	})
	old := e.leader("r", 0)
	oldAddr := e.leaderAddrs("r", 1)[0]
	e.mu.Lock()
	b := e.brokers[old]
	e.mu.Unlock()
	if err := b.Config.Registrar.(*zkcoord.Registrar).Close(); err != nil {
		t.Fatal(err)
	}
	e.waitFor("new leaders for the deposed broker's partitions", func() bool {
		for p := wire.Partition(0); p < 4; p++ {
			if info, _, err := zkcoord.GroupsOn(e.obs).PartitionLeader("r", p); err != nil || info.ID == old {
				return false
			}
		}
		return true
	})
	for p := wire.Partition(0); p < 4; p++ {
		ms := sizedPayloads(p, 30, 20)
		col.mu.Lock()
		want[p].add(ms)
		col.mu.Unlock()
		e.produceAcks("r", p, ms)
	}
	e.waitFor("every message written after the leaders moved", func() bool {
		missing, _, _ := col.check()
		return missing == 0
	})
	if _, dups, bad := col.check(); dups != 0 || len(bad) != 0 {
		t.Fatalf("%d duplicates; wrong messages: %v", dups, bad)
	}
	c.viewMu.Lock()
	defer c.viewMu.Unlock()
	for p, addr := range c.leaders.fetchingFrom()["r"] {
		if addr == oldAddr {
			t.Errorf("partition %d still fetched from the deposed leader %s", p, addr)
		}
	}
}
