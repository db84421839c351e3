package replica

import (
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// TestISRShrinkAndExpand: a stopped follower leaves the ISR after
// replica.lag.time.max.ms and rejoins once it has caught up; with
// min.insync.replicas=2 and only the leader in the ISR, acks=all is refused
// with NotEnoughReplicas and nothing is appended.
func TestISRShrinkAndExpand(t *testing.T) {
	dirs := map[BrokerID]string{}
	c := startCluster(t, 3, func(id int, cfg *broker.Config, rc *Config) { rc.MinInsyncReplicas = 2 })
	for id, nd := range c.brokers {
		dirs[id] = nd.dir
	}
	c.createTopic("i", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("i", 0, 3)
	addr := c.brokers[leader].b.Addr
	var followers []BrokerID
	for id := range c.brokers {
		if id != leader {
			followers = append(followers, id)
		}
	}
	slices.Sort(followers)
	var acked []string
	send := func(i int) wire.ProduceResult {
		return produce(t, addr, "i", 0, wire.AcksAll, wire.NewMessageSet(msg(i)))
	}
	if r := send(0); r.Code != wire.CodeNone {
		t.Fatal(r.Code)
	}
	acked = append(acked, string(msg(0)))

	c.stop(followers[0])
	c.waitLeader("i", 0, 2) // shrunk after the lag time, by the leader
	if r := send(1); r.Code != wire.CodeNone {
		t.Fatalf("acks=all with 2 in sync: %v", r.Code)
	}
	acked = append(acked, string(msg(1)))

	c.stop(followers[1])
	c.waitLeader("i", 0, 1)
	lp, _ := c.brokers[leader].layerPartition("i", 0)
	before := lp.log.WrittenEnd()
	if r := send(2); r.Code != wire.CodeNotEnoughReplicas {
		t.Fatalf("acks=all with only the leader in sync = %v, want NotEnoughReplicas", r.Code)
	}
	if after := lp.log.WrittenEnd(); after != before {
		t.Fatalf("refused produce appended %d bytes", after-before)
	}
	// acks=1 still works.
	if r := produce(t, addr, "i", 0, wire.AcksLeader, wire.NewMessageSet(msg(3))); r.Code != wire.CodeNone {
		t.Fatalf("acks=1: %v", r.Code)
	}
	acked = append(acked, string(msg(3)))

	// The followers come back, catch up and rejoin.
	c.restart(followers[0], dirs[followers[0]])
	c.restart(followers[1], dirs[followers[1]])
	c.waitLeader("i", 0, 3)
	// A broker starting with replicas of "i" on disk registers its topics
	// (synchronously, before it serves) but leaves "i" out of 0.7's registry.
	if reg, err := zkcoord.RegistryOn(c.zk).TopicBrokers("i", false); err != nil || len(reg) != 0 {
		t.Fatalf("0.7 registrations of a replicated topic: %v, %v", reg, err)
	}
	if r := send(4); r.Code != wire.CodeNone {
		t.Fatalf("acks=all after the ISR grew back: %v", r.Code)
	}
	acked = append(acked, string(msg(4)))
	consumeAll(t, addr, "i", 0, acked)
	hw := lp.highWatermark()
	want := logBytes(t, dirs[leader], "i", 0, hw)
	for _, f := range followers {
		wait.Within(t, clusterTimeout, "the follower to hold the leader's bytes", func() bool {
			fp, ok := c.brokers[f].layerPartition("i", 0)
			return ok && fp.log.WrittenEnd() >= hw
		})
		if got := logBytes(t, dirs[f], "i", 0, hw); string(got) != string(want) {
			t.Fatalf("follower %d's bytes differ from the leader's below the HW", f)
		}
	}
}

// kip101 runs KIP-101's first scenario, deterministically: leader A and
// followers B and C hold m1 and m2, both acknowledged with acks=all, but the
// HW B last learned is still at m1's end (the leader holds B's next fetch
// for replica.fetch.wait.max.ms, here long, before it says the HW moved).
// C dies, so the controller shrinks the ISR in a new leader epoch that
// keeps A; B starts following again and truncates by the rule, and A dies
// before B fetches; B, still an ISR member, is elected. It returns what a
// consumer then reads from B.
//
// (Before rule 1 the scenario restarted B with an old HW checkpoint; a
// restarted broker now leaves the ISR, so B's truncation comes from the
// epoch change instead, as in KIP-101's text, where any leader change
// makes a follower truncate.)
func kip101(t *testing.T, rule Truncation) []string {
	c := startCluster(t, 3, func(id int, cfg *broker.Config, rc *Config) {
		rc.Truncation = rule
		rc.LagTime = time.Minute          // no one leaves the ISR by lag
		rc.FetchWait = 10 * time.Second   // B learns the HW of m2 only after this
		rc.CheckpointInterval = time.Hour // only the final checkpoint
	})
	c.createTopic("k", zkcoord.Assignment{0: {0, 1, 2}})
	a := c.waitLeader("k", 0, 3)
	b, cc := (a+1)%3, (a+2)%3
	m1, m2 := wire.NewMessageSet(msg(1)), wire.NewMessageSet(msg(2))
	if r := produce(t, c.brokers[a].b.Addr, "k", 0, wire.AcksAll, m1); r.Code != wire.CodeNone {
		t.Fatal(r.Code)
	}
	bp, _ := c.brokers[b].layerPartition("k", 0)
	wait.Within(t, clusterTimeout, "B to learn the HW of m1", func() bool { return bp.highWatermark() == Offset(len(m1)) })
	if r := produce(t, c.brokers[a].b.Addr, "k", 0, wire.AcksAll, m2); r.Code != wire.CodeNone {
		t.Fatal(r.Code)
	}
	if hw, end := bp.highWatermark(), bp.log.WrittenEnd(); hw != Offset(len(m1)) || end != Offset(len(m1)+len(m2)) {
		t.Fatalf("B's HW %d and log end %d, want %d and %d: the schedule did not happen", hw, end, len(m1), len(m1)+len(m2))
	}
	truncated := make(chan Offset, 1)
	hook := func(topic string, point Offset, stop <-chan struct{}) {
		if topic != "k" {
			return
		}
		select {
		case truncated <- point:
		default:
		}
		<-stop // hold B between truncating and fetching
	}
	truncatedHook.Store(&hook)
	t.Cleanup(func() { truncatedHook.Store(nil) })
	before, _ := c.state("k", 0)
	c.stop(cc)
	var point Offset
	select {
	case point = <-truncated:
	case <-time.After(clusterTimeout):
		t.Fatal("B never truncated for the new epoch")
	}
	t.Logf("rule %s: B truncated to %d (m1 ends at %d, m2 at %d)", rule, point, len(m1), len(m1)+len(m2))
	old, _ := c.state("k", 0)
	if old.Leader != a || old.LeaderEpoch <= before.LeaderEpoch || !slices.Contains(old.ISR, b) {
		t.Fatalf("after C died the state is %+v, want A leading a new epoch with B in the ISR", old)
	}
	c.stop(a)
	wait.Within(t, clusterTimeout, "B to be elected", func() bool {
		st, ok := c.state("k", 0)
		return ok && st.Leader == b && st.LeaderEpoch > old.LeaderEpoch
	})
	c.waitLeader("k", 0, 1)
	var got []string
	wait.Within(t, clusterTimeout, "B's log to be visible", func() bool {
		got = consume(t, c.brokers[b].b.Addr, "k", 0)
		return len(got) > 0 && bp.highWatermark() == bp.log.WrittenEnd() && bp.log.EndOffset() == bp.log.WrittenEnd()
	})
	return got
}

// TestKIP101HWTruncationLosesAcknowledged: with replica.truncation=hw (0.8's
// rule) the acknowledged m2 is lost.
func TestKIP101HWTruncationLosesAcknowledged(t *testing.T) {
	got := kip101(t, TruncateHW)
	if want := []string{string(msg(1))}; !slices.Equal(got, want) {
		t.Fatalf("with hw truncation the new leader holds %q, want %q (m2 lost)", got, want)
	}
}

// TestKIP101EpochTruncationKeepsAcknowledged: with leader epochs (KIP-101)
// B asks the leader where its epoch ends and keeps m2.
func TestKIP101EpochTruncationKeepsAcknowledged(t *testing.T) {
	got := kip101(t, TruncateEpoch)
	if want := []string{string(msg(1)), string(msg(2))}; !slices.Equal(got, want) {
		t.Fatalf("with epoch truncation the new leader holds %q, want %q", got, want)
	}
}

// Test07ClientsOnReplicatedTopic: a 0.7 client's PRODUCE (no response) to a
// replicated partition's leader is replicated and read back with 0.7 FETCH
// once the followers hold it; a 0.7 PRODUCE to a follower is refused (the
// connection closes, as for any refused 0.7 produce) and appends nothing.
func Test07ClientsOnReplicatedTopic(t *testing.T) {
	c := startCluster(t, 3, nil)
	c.createTopic("o", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("o", 0, 3)
	send := func(addr string, payload []byte) net.Conn {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		frame := wire.AppendRequest(nil, &wire.Request{Type: wire.RequestProduce,
			Produce: []wire.ProduceRequest{{Topic: "o", Partition: 0, Messages: wire.NewMessageSet(payload)}}})
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		return nc
	}
	send(c.brokers[leader].b.Addr, []byte("from a 0.7 producer"))
	consumeAll(t, c.brokers[leader].b.Addr, "o", 0, []string{"from a 0.7 producer"})
	follower := (leader + 1) % 3
	nc := send(c.brokers[follower].b.Addr, []byte("to a follower"))
	nc.SetReadDeadline(time.Now().Add(clusterTimeout))
	if _, err := nc.Read(make([]byte, 1)); err == nil {
		t.Fatal("the follower answered a 0.7 PRODUCE")
	}
	fp, _ := c.brokers[follower].layerPartition("o", 0)
	lp, _ := c.brokers[leader].layerPartition("o", 0)
	wait.Within(t, clusterTimeout, "the follower to hold exactly the leader's log", func() bool {
		return fp.log.WrittenEnd() == lp.log.WrittenEnd()
	})
}

// TestAcksAllWaitsForEveryISRMember: with one follower held before its
// first fetch (still in the ISR: the lag time is long), acks=all times out
// (RequestTimedOut) while acks=1 is acknowledged; once the follower is let
// go, acks=all is acknowledged again.
func TestAcksAllWaitsForEveryISRMember(t *testing.T) {
	release := make(chan struct{})
	var held atomic.Bool
	hook := func(topic string, point Offset, stop <-chan struct{}) {
		if topic == "w" && held.CompareAndSwap(false, true) {
			select {
			case <-release:
			case <-stop:
			}
		}
	}
	truncatedHook.Store(&hook)
	t.Cleanup(func() { truncatedHook.Store(nil) })
	c := startCluster(t, 3, func(id int, cfg *broker.Config, rc *Config) { rc.LagTime = time.Minute })
	c.createTopic("w", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("w", 0, 3)
	addr := c.brokers[leader].b.Addr
	wait.Within(t, clusterTimeout, "one follower to be held", held.Load)
	req := func(acks int16) wire.ErrorCode {
		_, body := request(t, addr, wire.AppendProduceAcksRequest(nil, &wire.ProduceAcksRequest{Acks: acks, TimeoutMs: 300,
			Parts: []wire.ProduceRequest{{Topic: "w", Partition: 0, Messages: wire.NewMessageSet(msg(1))}}}))
		rs, err := wire.DecodeProduceAcksResponse(body)
		if err != nil || len(rs) != 1 {
			t.Fatalf("%v %v", rs, err)
		}
		return rs[0].Code
	}
	if code := req(wire.AcksAll); code != wire.CodeRequestTimedOut {
		t.Fatalf("acks=all with a silent ISR member: %v, want RequestTimedOut", code)
	}
	if code := req(wire.AcksLeader); code != wire.CodeNone {
		t.Fatalf("acks=1: %v", code)
	}
	close(release)
	wait.Within(t, clusterTimeout, "acks=all once the follower fetches", func() bool { return req(wire.AcksAll) == wire.CodeNone })
}
