package replica

import (
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// TestKIP380RestartedLeaderUnseenByAnyControllerLosesLeadership: a leader
// crashes, loses its log and restarts while no controller can see it (no
// broker's replication layer reaches ZooKeeper, as when ZooKeeper itself is
// down: the fault suite's compound seeds 1 and 2), so the first controller
// to look afterwards finds it registered and still the leader, with no
// memory of its old registration. Broker epochs (KIP-380:
// zkcoord.BrokerEpochs, a registration newer than the partition state's
// last write, PartitionStateZxid) tell that controller the leader
// restarted: it elects a member of the ISR that did not restart, the
// restarted broker copies the log back from it, and nothing acknowledged
// with acks=-1 is lost.
//
// The schedule is made with zktest.Link, not by stopping the shared
// ZooKeeper. Each broker has one session (rule 7), so a cut broker is cut
// in every role; only the leader is cut, and the followers run no
// controller candidate: the leader is the only controller the cluster can
// have. (That choice first kept sessions from reconnecting with their
// watches, which tripped the ZooKeeper client library's race on its last
// zxid under -race; zkcoord/libloop.go now gates it.) It crashes (its
// session is not closed) and its log is emptied; while it is down nobody
// is controller; once the server has expired its old session it restarts,
// registers anew and becomes a controller with no memory of the partition's
// history.
//
// Before broker epochs (98e2857^) it failed after 30 s waiting for "the
// controller to elect a replica that did not restart": the restarted
// broker, controller with no memory of its old registration, ordered
// itself to lead epoch 0 again ("leading ... epoch=0 isr=[0 1 2] leo=0
// hw=0", its log empty, 179 KB acknowledged on the followers) and then
// shrank the ISR to itself; with the same host:port the followers would
// have truncated to its empty log (compound seeds 1 and 2 lost 380 and
// 1,730 acknowledged writes so).
func TestKIP380RestartedLeaderUnseenByAnyControllerLosesLeadership(t *testing.T) {
	c := startClusterPassive(t, 3, func(id int, cfg *broker.Config, rc *Config) { rc.MinInsyncReplicas = 2 }, 1, 2)
	c.createTopic("k380", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("k380", 0, 3)
	if leader != 0 {
		t.Fatalf("broker %d leads; the schedule needs the preferred replica 0, the only controller candidate, to lead", leader)
	}
	setsA, acked := variedSets(81, "a", 20)
	produceAll(t, c.brokers[leader].b.Addr, "k380", 0, wire.AcksAll, setsA, "before the outage")
	before, _ := c.state("k380", 0)

	// The leader, the only controller candidate, crashes unseen.
	dir := c.crashUnseen(leader, "k380", before, nil)

	// It restarts with an empty log, registers anew and, the only
	// candidate, becomes a controller with no memory.
	c.restart(leader, dir)
	var st zkcoord.PartitionState
	wait.Within(t, clusterTimeout, "the controller to elect a replica that did not restart", func() bool {
		var ok bool
		st, ok = c.state("k380", 0)
		return ok && st.Leader != leader && st.Leader >= 0 && st.LeaderEpoch > before.LeaderEpoch
	})
	if !slices.Contains(before.ISR, st.Leader) || slices.Contains(st.ISR, leader) {
		t.Fatalf("state %+v after the restart: want a member of the old ISR %v leading, without the restarted %d",
			st, before.ISR, leader)
	}
	next := c.waitLeader("k380", 0, 3)
	if next == leader {
		t.Fatalf("the restarted broker %d leads again", leader)
	}
	setsB, more := variedSets(82, "b", 20)
	produceAll(t, c.brokers[next].b.Addr, "k380", 0, wire.AcksAll, setsB, "acks=-1 after the restart")
	acked = append(acked, more...)
	c.checkStrongISR("k380", 0)
	consumeAll(t, c.brokers[next].b.Addr, "k380", 0, acked)
}

// crashUnseen crashes broker id, the cluster's only controller candidate,
// so that no controller sees it go: it is cut from ZooKeeper first, then
// between (if any) runs, then it stops without closing its session, which
// is left to expire on the server, and its copy of topic-0 is emptied (its
// machine lost what it had not flushed). Once its registration is gone the
// partition's state must still be before. It returns the broker's log
// directory.
func (c *cluster) crashUnseen(id BrokerID, topic string, before zkcoord.PartitionState, between func()) string {
	t := c.t
	t.Helper()
	nd := c.brokers[id]
	nd.cutZK()
	if between != nil {
		between()
	}
	dir := c.dirOf(id)
	if err := nd.b.Stop(); err != nil {
		t.Fatal(err)
	}
	delete(c.brokers, id)
	loseLog(t, dir, topic, 0)
	wait.Within(t, clusterTimeout, fmt.Sprintf("broker %d's registration to expire", id), func() bool {
		live, err := zkcoord.RegistryOn(c.zk).Brokers(false)
		_, ok := live[id]
		return err == nil && !ok
	})
	if st, _ := c.state(topic, 0); st.Leader != before.Leader || st.LeaderEpoch != before.LeaderEpoch {
		t.Fatalf("state %+v changed while no controller could act, want %+v", st, before)
	}
	return dir
}

// TestRestartedBrokerRefusesToLeadUnderAnOlderState: a broker that lost
// its unflushed log and restarted is sent the order its previous run was
// due (lead in the epoch ZooKeeper still holds, a state written before
// its new registration). It refuses: the state was decided for the run
// that held the bytes. The soak's compound seed 49 (3 December) lost 720
// acknowledged writes so: the order, undelivered while the broker was
// down, reached the new process, which led with its cut log, and the
// other ISR member truncated 916,611 bytes to it. Before the fix this test
// failed: the order was taken (code 0) and L led with an empty log.
//
// No controller runs (L, the only candidate, comes back passive); the
// test takes /controller itself to send the order.
func TestRestartedBrokerRefusesToLeadUnderAnOlderState(t *testing.T) {
	const topic = "stale"
	c, _, before := startISRLF(t, topic, 95, 1, 2)
	dirL := c.crashUnseen(L, topic, before, nil)
	c.passive[L] = true
	c.restart(L, dirL)

	ok, err := zkcoord.ElectionOn(c.zk).Elect(F, time.Now())
	if err != nil || !ok {
		t.Fatalf("taking /controller for the test: %v, %v", ok, err)
	}
	epoch, err := zkcoord.ElectionOn(c.zk).Epoch()
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := c.state(topic, 0); st.Leader != L || st.LeaderEpoch != before.LeaderEpoch {
		t.Fatalf("state %+v, want L (%d) leading epoch %d as before the crash", st, L, before.LeaderEpoch)
	}
	nl := c.brokers[L]
	code, part := order(t, nl.interAddr(), &wire.LeaderAndISRRequest{ControllerID: F, ControllerEpoch: epoch,
		Partitions: []wire.PartitionLeader{{Topic: topic, Partition: 0, Leader: L, LeaderEpoch: before.LeaderEpoch,
			ISR: before.ISR, Replicas: []BrokerID{0, 1, 2}}},
		Leaders: []wire.Broker{{ID: L, Host: "127.0.0.1", Port: nl.b.InterBrokerAddr().(*net.TCPAddr).Port}}})
	if code != wire.CodeNone || part != wire.CodeFencedLeaderEpoch {
		t.Errorf("the order to lead under the old state: %v / %v, want %v / %v", code, part, wire.CodeNone, wire.CodeFencedLeaderEpoch)
	}
	if p, ok := nl.layerPartition(topic, 0); ok {
		p.mu.Lock()
		leading := p.lead != nil
		p.mu.Unlock()
		if leading {
			t.Fatalf("L leads %s-0 in epoch %d with the log it restarted with", topic, before.LeaderEpoch)
		}
	}
}
