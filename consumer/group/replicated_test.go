package group

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest/replicatest"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// This file tests consumer groups on replicated topics (issue 12): three
// real brokers with the replication layer, in this process, as
// broker/replica's cluster tests start them.

// startReplicaBroker starts broker id with the replication layer.
func (e *env) startReplicaBroker(id wire.BrokerID) {
	e.t.Helper()
	e.startBrokerWith(id, 1, func(cfg *broker.Config) {
		cfg.BrokerID, cfg.ZkConnect = id, e.zk // as startBrokerWith sets them; the layer reads them now
		replicatest.Tune(cfg)                  // zk.sessiontimeout.ms is testSession
		cfg.Logger = testLogger().With("broker", id)
		cfg.Layer = replicatest.Layer(*cfg)
	})
}

// createReplicated creates topic with partitions partitions, each on every
// one of brokers, and waits until each has a leader with all of them in
// its ISR.
func (e *env) createReplicated(topic string, partitions int, brokers []wire.BrokerID) {
	e.t.Helper()
	a := zkcoord.Assignment{}
	for p := 0; p < partitions; p++ {
		rs := make([]wire.BrokerID, len(brokers))
		for i := range brokers {
			rs[i] = brokers[(p+i)%len(brokers)]
		}
		a[wire.Partition(p)] = rs
	}
	if err := zkcoord.ReplicationOn(e.obs).CreateTopic(topic, a); err != nil {
		e.t.Fatal(err)
	}
	for p := 0; p < partitions; p++ {
		e.waitFor(fmt.Sprintf("%s-%d led with a full ISR", topic, p), func() bool {
			_, st, err := zkcoord.GroupsOn(e.obs).PartitionLeader(topic, wire.Partition(p))
			return err == nil && len(st.ISR) == len(brokers)
		})
	}
}

// leader returns the broker leading a replicated partition now.
func (e *env) leader(topic string, p wire.Partition) wire.BrokerID {
	e.t.Helper()
	info, _, err := zkcoord.GroupsOn(e.obs).PartitionLeader(topic, p)
	if err != nil {
		e.t.Fatal(err)
	}
	return info.ID
}

// produceAcks sends payloads to a replicated partition's leader with
// PRODUCE_ACKS acks=all, in batches, retrying a batch on another leader
// until it is acknowledged.
func (e *env) produceAcks(topic string, p wire.Partition, payloads [][]byte) {
	e.t.Helper()
	const batch = 50
	for i := 0; i < len(payloads); i += batch {
		set := wire.NewMessageSet(payloads[i:min(i+batch, len(payloads))]...)
		var last error
		e.waitFor(fmt.Sprintf("batch %d of %s-%d acknowledged by all replicas", i/batch, topic, p), func() bool {
			info, _, err := zkcoord.GroupsOn(e.obs).PartitionLeader(topic, p)
			if err == nil {
				err = replicatest.ProduceAcks(info.Addr(), topic, p, set)
			}
			last = err
			return err == nil
		})
		_ = last
	}
}

// TestGroupReadsReplicatedTopic: two members of a group split an RF=3
// topic's partitions, named by number as in 0.8, read every message once,
// and commit offsets under /consumers/<group>/offsets/<topic>/<partition>;
// a 0.7 topic on the same brokers is consumed as before, by the same group.
func TestGroupReadsReplicatedTopic(t *testing.T) {
	e := newEnv(t)
	ids := []wire.BrokerID{0, 1, 2}
	for _, id := range ids {
		e.startReplicaBroker(id)
	}
	e.createReplicated("r", 2, ids)
	e.produce("plain", 1, 1, payloads("seed", 1)) // a 0.7 topic on broker 1

	col := newCollector()
	var cs []*Consumer
	for i := 0; i < 2; i++ {
		c := e.start(e.consumerConfig("g"), map[string]int{"r": 1, "plain": 1})
		read(t, c, "r", col)
		read(t, c, "plain", col)
		cs = append(cs, c)
	}
	e.waitFor("each member owning one replicated partition, by 0.8's names", func() bool {
		o := e.owners("g", "r")
		return len(o) == 2 && o["0"] != "" && o["1"] != "" && o["0"] != o["1"] &&
			len(cs[0].Owned()["r"]) == 1 && len(cs[1].Owned()["r"]) == 1
	})
	e.waitFor("the 0.7 topic owned under its 0.7 name 1-0", func() bool {
		o := e.owners("g", "plain")
		return len(o) == 1 && o["1-0"] != ""
	})
	want := map[wire.Partition][][]byte{0: payloads("r0", 300), 1: payloads("r1", 300)}
	for p, ms := range want {
		e.produceAcks("r", p, ms)
	}
	plain := payloads("plain", 100)
	e.produce("plain", 1, 1, plain)
	e.waitFor("every message of both topics", func() bool {
		return col.has(want[0]) && col.has(want[1]) && col.has(plain)
	})
	for _, ms := range [][][]byte{want[0], want[1], plain} {
		if _, _, d := col.stats(ms); d != 0 {
			t.Fatalf("%d duplicates in a stable group", d)
		}
	}
	for _, c := range cs {
		if err := c.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for p := wire.Partition(0); p < 2; p++ {
		v, err := e.obs.Get(zkcoord.OffsetsPath("g", "r") + fmt.Sprintf("/%d", p))
		if err != nil || string(v) == "0" {
			t.Fatalf("offset of r/%d = %q, %v", p, v, err)
		}
	}
	// The offset tools read them too.
	cfg := e.consumerConfig("g")
	st, _, err := Status(context.Background(), cfg, []string{"r"})
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 {
		t.Fatalf("status of r: %+v, want 2 partitions", st)
	}
	for _, s := range st {
		if lag, ok := s.Lag(); !ok || lag != 0 || !zkcoord.IsReplicated(s.Partition) {
			t.Fatalf("status %+v (err %v): want a replicated partition with lag 0", s, s.LogEndErr)
		}
	}
	// A stopped group is rewound through the leaders.
	for _, c := range cs {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := ResetOffsets(context.Background(), cfg, []string{"r"}, wire.EarliestTime, false)
	if err != nil || len(rs) != 2 {
		t.Fatalf("reset: %+v, %v", rs, err)
	}
	for p := wire.Partition(0); p < 2; p++ {
		if off, ok, err := zkcoord.GroupsOn(e.obs).Offset("g", "r", zkcoord.ReplicatedPartition(p)); err != nil || !ok || off != 0 {
			t.Fatalf("offset of r/%d after the reset: %d, %v, %v", p, off, ok, err)
		}
	}
}

// failover is what failoverMidPartition observed.
type failover struct {
	c       *Consumer
	s       *Stream
	old     wire.BrokerID // the leader that failed
	failed  time.Time     // when fail returned
	elected time.Time     // when ZooKeeper named another leader
}

// failoverMidPartition is the scenario of the failover tests: partition 0
// of topic r, RF=3 on ids (started by the caller), holds 2000 messages
// acknowledged by every replica; a group consumer of group g with small
// fetches, one queued, consumes 100 of them, so that most are fetched
// after fail(leader) makes the leader fail. Once ZooKeeper names another
// leader, 500 more messages are written (only the new leader has them).
// The consumer must continue from its own position, with no rebalance:
// the test fails unless every message, before and after the failover,
// arrives exactly once.
func (e *env) failoverMidPartition(t *testing.T, ids []wire.BrokerID, fail func(old wire.BrokerID)) failover {
	t.Helper()
	e.createReplicated("r", 1, ids)
	before := payloads("before", 2000)
	e.produceAcks("r", 0, before)

	cfg := e.consumerConfig("g")
	cfg.FetchSize = 2 << 10 // small fetches, one queued: most is fetched after the failover
	cfg.QueuedChunks = 1
	f := failover{c: e.start(cfg, map[string]int{"r": 1})}
	f.s = f.c.Streams("r")[0]
	col := newCollector()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for range 100 {
		m, err := f.s.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		col.add(string(m.Payload))
	}
	f.old = e.leader("r", 0)
	fail(f.old)
	f.failed = time.Now()
	e.waitFor("a new leader after the failover", func() bool {
		info, _, err := zkcoord.GroupsOn(e.obs).PartitionLeader("r", 0)
		return err == nil && info.ID != f.old
	})
	f.elected = time.Now()
	after := payloads("after", 500) // only the new leader has these
	e.produceAcks("r", 0, after)
	for !col.has(after) || !col.has(before) {
		m, err := f.s.Next(ctx)
		if err != nil {
			_, mb, _ := col.stats(before)
			_, ma, _ := col.stats(after)
			t.Fatalf("after the failover: %v (missing %d before, %d after)", err, mb, ma)
		}
		col.add(string(m.Payload))
	}
	for what, ms := range map[string][][]byte{"before": before, "after": after} {
		if _, missing, dups := col.stats(ms); missing != 0 || dups != 0 {
			t.Fatalf("messages written %s the failover: %d missing, %d duplicates", what, missing, dups)
		}
	}
	return f
}

// TestGroupFollowsNewLeader: the leader of an RF=3 partition stops while
// the group consumer is in the middle of it; the consumer finds the new
// leader and continues from its own position (failoverMidPartition), and
// then commits the new leader's log end.
func TestGroupFollowsNewLeader(t *testing.T) {
	e := newEnv(t)
	ids := []wire.BrokerID{0, 1, 2}
	for _, id := range ids {
		e.startReplicaBroker(id)
	}
	f := e.failoverMidPartition(t, ids, e.stopBroker)
	f.s.Ack()
	if err := f.c.Commit(); err != nil {
		t.Fatal(err)
	}
	// The committed position is the new leader's end: a restarted group
	// member would resume there.
	off, ok, err := zkcoord.GroupsOn(e.obs).Offset("g", "r", zkcoord.ReplicatedPartition(0))
	if err != nil || !ok {
		t.Fatalf("committed offset: %d, %v, %v", off, ok, err)
	}
	want := wire.Offset(0)
	for _, p := range append(payloads("before", 2000), payloads("after", 500)...) {
		want += wire.Offset(len(wire.AppendMessage(nil, p)))
	}
	if off != want {
		t.Fatalf("committed offset %d, want the log end %d", off, want)
	}
}

// TestWhitelistTakesNewReplicatedTopic: a wildcard subscription picks up a
// replicated topic created after the consumer started (kafka-mirror's case).
func TestWhitelistTakesNewReplicatedTopic(t *testing.T) {
	e := newEnv(t)
	ids := []wire.BrokerID{0, 1, 2}
	for _, id := range ids {
		e.startReplicaBroker(id)
	}
	c := e.startFilter(e.consumerConfig("g"), Whitelist(`rep-.*`), 1)
	col := newCollector()
	readFiltered(t, c, col)
	e.createReplicated("rep-1", 2, ids)
	want := map[wire.Partition][][]byte{0: payloads("a", 200), 1: payloads("b", 200)}
	for p, ms := range want {
		e.produceAcks("rep-1", p, ms)
	}
	e.waitFor("every message of the new replicated topic", func() bool {
		return col.has(tagged("rep-1", want[0])) && col.has(tagged("rep-1", want[1]))
	})
	e.waitFor("rep-1's partitions owned under 0.8's names 0 and 1", func() bool {
		o := e.owners("g", "rep-1")
		return len(o) == 2 && o["0"] != "" && o["1"] != ""
	})
}

// TestOfflinePartitionHoldsUpNothing: a replicated partition without a live
// replica (offline: no leader) does not keep a fresh group from consuming
// the other partitions; it is owned, and waits for a leader.
func TestOfflinePartitionHoldsUpNothing(t *testing.T) {
	e := newEnv(t)
	for _, id := range []wire.BrokerID{0, 1, 2} {
		e.startReplicaBroker(id)
	}
	if err := zkcoord.ReplicationOn(e.obs).CreateTopic("r", zkcoord.Assignment{0: {0, 1}, 1: {2}}); err != nil {
		t.Fatal(err)
	}
	for p := wire.Partition(0); p < 2; p++ {
		e.waitFor(fmt.Sprintf("r-%d led", p), func() bool {
			_, _, err := zkcoord.GroupsOn(e.obs).PartitionLeader("r", p)
			return err == nil
		})
	}
	live := payloads("live", 200)
	e.produceAcks("r", 0, live)
	e.produceAcks("r", 1, payloads("offline", 10))
	e.stopBroker(2)
	e.waitFor("r-1 offline", func() bool {
		_, _, err := zkcoord.GroupsOn(e.obs).PartitionLeader("r", 1)
		return err != nil
	})
	c := e.start(e.consumerConfig("g"), map[string]int{"r": 1})
	col := newCollector()
	read(t, c, "r", col)
	e.waitFor("the live partition's messages", func() bool { return col.has(live) })
	e.waitFor("both partitions of r owned (the offline one waiting for a leader)", func() bool {
		return len(c.Owned()["r"]) == 2
	})
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := zkcoord.GroupsOn(e.obs).Offset("g", "r", zkcoord.ReplicatedPartition(1)); err != nil || ok {
		t.Fatalf("an offset was committed for the offline partition it never read: %v, %v", ok, err)
	}
}
