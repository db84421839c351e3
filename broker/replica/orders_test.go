package replica

import (
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// Issue 22's attacks on the cluster's own requests, each sent as raw bytes
// by someone who can reach a broker's port: every order is checked against
// ZooKeeper before anything changes (validate.go). Before the checks, each
// of these changed the cluster: the forged orders were taken as they came
// (a fake leader truncated every replica, two brokers led one partition, a
// non-replica counted toward min.insync.replicas), an order of controller
// epoch 2^31-1 locked the real controller out until restart, STOP_REPLICA
// deleted the only copy of a 0.7 topic, and a fetch claiming a dead
// follower's id put it back in the ISR.

// order sends a LEADER_AND_ISR to addr and returns the request's code and
// the partition's.
func order(t *testing.T, addr string, r *wire.LeaderAndISRRequest) (wire.ErrorCode, wire.ErrorCode) {
	t.Helper()
	code, body := request(t, addr, wire.AppendLeaderAndISRRequest(nil, r))
	if code != wire.CodeNone {
		return code, wire.CodeNone
	}
	errs, err := wire.DecodePartitionErrorsResponse(body)
	if err != nil || len(errs) != 1 {
		t.Fatalf("LEADER_AND_ISR response %v, %v", errs, err)
	}
	return code, errs[0].Code
}

func TestForgedOrdersChangeNothing(t *testing.T) {
	c := startCluster(t, 3, nil)
	c.createTopic("f", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("f", 0, 3)
	sets, acked := variedSets(22, "f", 10)
	produceAll(t, c.brokers[leader].b.Addr, "f", 0, wire.AcksAll, sets, "before the attacks")
	st, _ := c.state("f", 0)
	ctrl, _, err := zkcoord.ElectionOn(c.zk).Controller()
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := zkcoord.ElectionOn(c.zk).Epoch()
	if err != nil {
		t.Fatal(err)
	}
	follower := (leader + 1) % 3
	fake, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	fakeAddr := fake.Addr().(*net.TCPAddr)
	pl := func(leader BrokerID, isr ...BrokerID) wire.PartitionLeader {
		return wire.PartitionLeader{Topic: "f", Partition: 0, Leader: leader, LeaderEpoch: st.LeaderEpoch + 1,
			ISR: isr, Replicas: []BrokerID{0, 1, 2}}
	}
	attacks := []struct {
		name     string
		to       BrokerID
		r        wire.LeaderAndISRRequest
		request  wire.ErrorCode // the whole request's code
		partCode wire.ErrorCode // the partition's, when the request passes
	}{
		{"a fake leader on another address", follower, wire.LeaderAndISRRequest{ControllerID: ctrl, ControllerEpoch: epoch,
			Partitions: []wire.PartitionLeader{pl(9, 9)}, Leaders: []wire.Broker{{ID: 9, Host: "127.0.0.1", Port: fakeAddr.Port}}},
			wire.CodeNone, wire.CodeInvalidRequest},
		{"a second leader", follower, wire.LeaderAndISRRequest{ControllerID: ctrl, ControllerEpoch: epoch,
			Partitions: []wire.PartitionLeader{pl(follower, follower)}}, wire.CodeNone, wire.CodeInvalidRequest},
		{"a non-replica in the ISR", leader, wire.LeaderAndISRRequest{ControllerID: ctrl, ControllerEpoch: epoch,
			Partitions: []wire.PartitionLeader{{Topic: "f", Partition: 0, Leader: leader, LeaderEpoch: st.LeaderEpoch, ISR: []BrokerID{leader, 7}, Replicas: []BrokerID{0, 1, 2}}}},
			wire.CodeNone, wire.CodeInvalidRequest},
		{"a broker that is not the controller", follower, wire.LeaderAndISRRequest{ControllerID: (ctrl + 1) % 3, ControllerEpoch: epoch,
			Partitions: []wire.PartitionLeader{pl(follower, follower)}}, wire.CodeNotController, wire.CodeNone},
		{"controller epoch 2^31-1", follower, wire.LeaderAndISRRequest{ControllerID: ctrl, ControllerEpoch: math.MaxInt32,
			Partitions: []wire.PartitionLeader{pl(follower, follower)}}, wire.CodeNotController, wire.CodeNone},
	}
	for _, a := range attacks {
		for id := range c.brokers {
			if a.name == "controller epoch 2^31-1" || id == a.to {
				code, part := order(t, c.brokers[id].interAddr(), &a.r)
				if code != a.request || part != a.partCode {
					t.Errorf("%s to broker %d: %v / %v, want %v / %v", a.name, id, code, part, a.request, a.partCode)
				}
			}
		}
	}
	if now, _ := c.state("f", 0); now.Leader != st.Leader || now.LeaderEpoch != st.LeaderEpoch || !slices.Equal(now.ISR, st.ISR) {
		t.Fatalf("ZooKeeper's state moved: %+v, was %+v", now, st)
	}
	for id, nd := range c.brokers {
		p, _ := nd.layerPartition("f", 0)
		p.mu.Lock()
		role, e := p.lead != nil, p.leaderEpoch
		p.mu.Unlock()
		if role != (id == leader) || e != st.LeaderEpoch {
			t.Errorf("broker %d: leading %v in epoch %d after the attacks, want leading %v in %d", id, role, e, id == leader, st.LeaderEpoch)
		}
	}
	c.checkStrongISR("f", 0)
	consumeAll(t, c.brokers[leader].b.Addr, "f", 0, acked)

	// The real controller is not locked out: the leader dies and another
	// is elected.
	c.stop(leader)
	next := c.waitLeader("f", 0, 2)
	if next == leader {
		t.Fatalf("no new leader")
	}
	consumeAll(t, c.brokers[next].b.Addr, "f", 0, acked)
}

// TestForgedStopReplicaDeletesNothing: STOP_REPLICA, even with the real
// controller's id and epoch, deletes neither a replicated partition whose
// assignment still names the broker nor a 0.7 topic (its only copy).
func TestForgedStopReplicaDeletesNothing(t *testing.T) {
	c := startCluster(t, 2, nil)
	c.createTopic("s", zkcoord.Assignment{0: {0, 1}})
	leader := c.waitLeader("s", 0, 2)
	nd := c.brokers[leader]
	if r := produce(t, nd.b.Addr, "s", 0, wire.AcksAll, wire.NewMessageSet(msg(1))); r.Code != wire.CodeNone {
		t.Fatal(r.Code)
	}
	// A 0.7 topic on the same broker, written with PRODUCE_ACKS to a topic
	// without an assignment (the 0.7 path).
	if r := produce(t, nd.b.Addr, "plain", 0, wire.AcksLeader, wire.NewMessageSet(msg(2))); r.Code != wire.CodeNone {
		t.Fatal(r.Code)
	}
	ctrl, _, _ := zkcoord.ElectionOn(c.zk).Controller()
	epoch, _ := zkcoord.ElectionOn(c.zk).Epoch()
	for _, topic := range []string{"s", "plain"} {
		code, body := request(t, nd.interAddr(), wire.AppendStopReplicaRequest(nil, &wire.StopReplicaRequest{
			ControllerID: ctrl, ControllerEpoch: epoch, Delete: true, Partitions: []wire.TopicPartition{{Topic: topic, Partition: 0}}}))
		errs, err := wire.DecodePartitionErrorsResponse(body)
		if code != wire.CodeNone || err != nil || len(errs) != 1 || errs[0].Code != wire.CodeInvalidRequest {
			t.Errorf("STOP_REPLICA with delete of %s: %v %v %v, want InvalidRequest", topic, code, errs, err)
		}
		if segs, _ := filepath.Glob(filepath.Join(nd.dir, topic+"-0", "*.kafka")); len(segs) == 0 {
			t.Errorf("%s-0 was deleted", topic)
		}
	}
	if _, err := os.Stat(filepath.Join(nd.dir, "plain-0")); err != nil {
		t.Fatalf("the 0.7 topic: %v", err)
	}
	if r := produce(t, nd.b.Addr, "s", 0, wire.AcksAll, wire.NewMessageSet(msg(3))); r.Code != wire.CodeNone {
		t.Fatalf("the leader after the forged STOP_REPLICA: %v", r.Code)
	}
}

// TestForgedFetchOfDeadReplica: a REPLICA_FETCH claiming the id of a dead
// follower, at the leader's end, does not put it back in the ISR (it is not
// registered), so an acks=-1 write acknowledged afterwards is not counted
// on a replica that does not hold it.
func TestForgedFetchOfDeadReplica(t *testing.T) {
	c := startCluster(t, 3, nil)
	c.createTopic("g", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("g", 0, 3)
	dead := (leader + 1) % 3
	c.stop(dead)
	c.waitLeader("g", 0, 2)
	lp, _ := c.brokers[leader].layerPartition("g", 0)
	st, _ := c.state("g", 0)
	for range 3 {
		code, _ := request(t, c.brokers[leader].interAddr(), wire.AppendReplicaFetchRequest(nil, &wire.ReplicaFetchRequest{
			ReplicaID: dead, Topic: "g", Partition: 0, LeaderEpoch: st.LeaderEpoch, Offset: lp.log.WrittenEnd(), MaxSize: 1 << 10}))
		if code != wire.CodeNone {
			t.Fatalf("forged fetch: %v", code)
		}
	}
	if now, _ := c.state("g", 0); slices.Contains(now.ISR, dead) {
		t.Fatalf("a fetch claiming dead broker %d's id put it in the ISR %v", dead, now.ISR)
	}
	if isr := lp.leaderState().ISR(); slices.Contains(isr, dead) {
		t.Fatalf("the leader's ISR %v holds dead broker %d", isr, dead)
	}
}
