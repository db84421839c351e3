package zkcoord

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/zkcoord/zktest"

	"github.com/netdb11/kafka/broker/wire"
)

func TestPartitionStateJSON(t *testing.T) {
	s := PartitionState{ControllerEpoch: 3, Leader: 1, LeaderEpoch: 7, ISR: []wire.BrokerID{1, 2}}
	got := string(s.Marshal())
	want := `{"controller_epoch":3,"leader":1,"version":1,"leader_epoch":7,"isr":[1,2]}`
	if got != want {
		t.Fatalf("Marshal = %s, want %s", got, want)
	}
	back, err := ParsePartitionState([]byte(want))
	if err != nil || !reflect.DeepEqual(back, PartitionState{ControllerEpoch: 3, Leader: 1, Version: 1, LeaderEpoch: 7, ISR: []wire.BrokerID{1, 2}}) {
		t.Fatalf("Parse = %+v, %v", back, err)
	}
	for _, bad := range []string{``, `{`, `{"version":2}`, `[1]`} {
		if _, err := ParsePartitionState([]byte(bad)); err == nil {
			t.Errorf("ParsePartitionState(%q) accepted", bad)
		}
	}
}

func TestAssignmentJSON(t *testing.T) {
	a := Assignment{0: {0, 1, 2}, 1: {1, 2, 0}}
	b, err := a.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":1,"partitions":{"0":[0,1,2],"1":[1,2,0]}}`; string(b) != want {
		t.Fatalf("Marshal = %s, want %s", b, want)
	}
	back, err := ParseAssignment(b)
	if err != nil || !reflect.DeepEqual(back, a) {
		t.Fatalf("Parse = %v, %v", back, err)
	}
	for _, bad := range []string{`{"version":1,"partitions":{"x":[1]}}`, `{"version":1,"partitions":{"0":[]}}`, `{"version":0}`} {
		if _, err := ParseAssignment([]byte(bad)); err == nil {
			t.Errorf("ParseAssignment(%q) accepted", bad)
		}
	}
}

func TestAdminJSON(t *testing.T) {
	rs := []Reassignment{{Topic: "t", Partition: 0, Replicas: []wire.BrokerID{1, 2}}}
	got, err := ParseReassignments(MarshalReassignments(rs))
	if err != nil || !reflect.DeepEqual(got, rs) {
		t.Fatalf("reassignments round trip: %v, %v", got, err)
	}
	ps := []wire.TopicPartition{{Topic: "t", Partition: 3}}
	gotp, err := ParseElection(MarshalElection(ps))
	if err != nil || !reflect.DeepEqual(gotp, ps) {
		t.Fatalf("election round trip: %v, %v", gotp, err)
	}
}

// TestReplicationRegistry writes and reads 0.8's nodes on a real ZooKeeper,
// beside a 0.7 broker registration of the same topic.
func TestReplicationRegistry(t *testing.T) {
	c := dial(t, testConfig(zktest.Start(t)))
	if err := c.CreateEphemeral(TopicBrokerPath("t", 5), []byte("2")); err != nil {
		t.Fatal(err)
	}
	a := Assignment{0: {0, 1, 2}}
	if err := ReplicationOn(c).CreateTopic("t", a); err != nil {
		t.Fatalf("CreateTopic over a 0.7 registration: %v", err)
	}
	if err := ReplicationOn(c).CreateTopic("t", a); !errors.Is(err, ErrNodeExists) {
		t.Fatalf("second CreateTopic = %v, want ErrNodeExists", err)
	}
	got, ok, err := ReplicationOn(c).TopicAssignment("t")
	if err != nil || !ok || !reflect.DeepEqual(got, a) {
		t.Fatalf("TopicAssignment = %v, %v, %v", got, ok, err)
	}

	s := PartitionState{ControllerEpoch: 1, Leader: 0, LeaderEpoch: 0, ISR: []wire.BrokerID{0, 1, 2}}
	v, err := ReplicationOn(c).WritePartitionState("t", 0, s, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReplicationOn(c).WritePartitionState("t", 0, s, -1); !errors.Is(err, ErrNodeExists) {
		t.Fatalf("second create = %v, want ErrNodeExists", err)
	}
	s2 := s
	s2.ISR = []wire.BrokerID{0, 1}
	v2, err := ReplicationOn(c).WritePartitionState("t", 0, s2, v)
	if err != nil {
		t.Fatal(err)
	}
	// A writer holding the old version is fenced.
	if _, err := ReplicationOn(c).WritePartitionState("t", 0, s, v); !errors.Is(err, ErrBadVersion) {
		t.Fatalf("stale write = %v, want ErrBadVersion", err)
	}
	back, bv, ok, err := ReplicationOn(c).PartitionStateOf("t", 0)
	if err != nil || !ok || bv != v2 || !reflect.DeepEqual(back.ISR, s2.ISR) {
		t.Fatalf("PartitionStateOf = %+v v%d %v %v, want ISR %v v%d", back, bv, ok, err, s2.ISR, v2)
	}
	if _, _, ok, err := ReplicationOn(c).PartitionStateOf("t", 9); ok || err != nil {
		t.Fatalf("missing partition state: ok=%v err=%v", ok, err)
	}

	// 0.7 readers still see only the broker registration.
	brokers, err := RegistryOn(c).TopicBrokers("t", false)
	if err != nil || !reflect.DeepEqual(brokers, map[wire.BrokerID]int{5: 2}) {
		t.Fatalf("TopicBrokers = %v, %v", brokers, err)
	}
	all, err := ReplicationOn(c).ReplicatedTopics()
	if err != nil || len(all) != 1 || !reflect.DeepEqual(all["t"], a) {
		t.Fatalf("ReplicatedTopics = %v, %v", all, err)
	}
}

func TestControllerElectionAndEpoch(t *testing.T) {
	connect := zktest.Start(t)
	a, b := dial(t, testConfig(connect)), dial(t, testConfig(connect))
	won, err := ElectionOn(a).Elect(1, time.Now())
	if err != nil || !won {
		t.Fatalf("first election: %v, %v", won, err)
	}
	won, err = ElectionOn(b).Elect(2, time.Now())
	if err != nil || won {
		t.Fatalf("second election: %v, %v (want lost)", won, err)
	}
	id, ok, err := ElectionOn(b).Controller()
	if err != nil || !ok || id != 1 {
		t.Fatalf("Controller = %d %v %v", id, ok, err)
	}
	// Concurrent increments each get a distinct epoch.
	var wg sync.WaitGroup
	epochs := make(chan int32, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		c := a
		if i%2 == 1 {
			c = b
		}
		go func() {
			defer wg.Done()
			e, _, err := ElectionOn(c).IncrementEpoch()
			if err != nil {
				t.Error(err)
			}
			epochs <- e
		}()
	}
	wg.Wait()
	close(epochs)
	seen := map[int32]bool{}
	for e := range epochs {
		if seen[e] {
			t.Fatalf("epoch %d handed out twice", e)
		}
		seen[e] = true
	}
	if e, err := ElectionOn(a).Epoch(); err != nil || e != 8 {
		t.Fatalf("ControllerEpoch = %d, %v, want 8", e, err)
	}
	// The controller's node goes with its session.
	a.Close()
	wait.Within(t, testTimeout, "the controller node to go", func() bool {
		_, ok, err := ElectionOn(b).Controller()
		return err == nil && !ok
	})
	if won, err := ElectionOn(b).Elect(2, time.Now()); err != nil || !won {
		t.Fatalf("election after the controller left: %v, %v", won, err)
	}
}

func TestLogEndsJSON(t *testing.T) {
	ends := []LogEnd{{Topic: "a", Partition: 0, End: 1234, Recovered: true}, {Topic: "b", Partition: 2, End: 0}}
	got := string(MarshalLogEnds(ends))
	want := `{"version":1,"logs":[{"topic":"a","partition":0,"end":1234,"recovered":true},{"topic":"b","partition":2,"end":0,"recovered":false}]}`
	if got != want {
		t.Fatalf("MarshalLogEnds = %s, want %s", got, want)
	}
	back, err := ParseLogEnds([]byte(want))
	if err != nil || len(back) != 2 || back[wire.TopicPartition{Topic: "a", Partition: 0}] != ends[0] {
		t.Fatalf("ParseLogEnds = %v, %v", back, err)
	}
	if got := string(MarshalLogEnds(nil)); got != `{"version":1,"logs":[]}` {
		t.Fatalf("MarshalLogEnds(nil) = %s", got)
	}
	for _, bad := range []string{``, `{`, `{"version":2,"logs":[]}`, `[1]`, `{"version":1,"logs":[{"end":"x"}]}`} {
		if _, err := ParseLogEnds([]byte(bad)); err == nil {
			t.Errorf("ParseLogEnds(%q) accepted", bad)
		}
	}
}

// TestFencedWritesStopOnceTheControllerEpochMoves: a controller's writes
// (Replication.Fenced with the version its IncrementEpoch left) go through
// while /controller_epoch stays, and once a newer controller bumps it they
// fail with ErrFenced and change nothing: the state, a new state's
// creation, and an assignment.
func TestFencedWritesStopOnceTheControllerEpochMoves(t *testing.T) {
	c := dial(t, testConfig(zktest.Start(t)))
	r := ReplicationOn(c)
	if err := r.CreateTopic("f", Assignment{0: {1, 2}, 1: {2, 1}}); err != nil {
		t.Fatal(err)
	}
	epoch, version, err := ElectionOn(c).IncrementEpoch()
	if err != nil {
		t.Fatal(err)
	}
	mine := r.Fenced(version)
	st := PartitionState{ControllerEpoch: epoch, Leader: 1, ISR: []wire.BrokerID{1, 2}}
	v, err := mine.WritePartitionState("f", 0, st, -1)
	if err != nil {
		t.Fatalf("a fenced create in the controller's own epoch: %v", err)
	}
	st.LeaderEpoch = 1
	if v, err = mine.WritePartitionState("f", 0, st, v); err != nil {
		t.Fatalf("a fenced write in the controller's own epoch: %v", err)
	}

	if _, _, err := ElectionOn(c).IncrementEpoch(); err != nil { // a newer controller
		t.Fatal(err)
	}
	stale := st
	stale.LeaderEpoch, stale.ISR = 2, []wire.BrokerID{1}
	if _, err := mine.WritePartitionState("f", 0, stale, v); !errors.Is(err, ErrFenced) {
		t.Errorf("a write after the epoch moved: %v, want ErrFenced", err)
	}
	if got, _, _, err := r.PartitionStateOf("f", 0); err != nil || got.LeaderEpoch != 1 {
		t.Errorf("state after the fenced write: %+v, %v; want leader epoch 1 kept", got, err)
	}
	if _, err := mine.WritePartitionState("f", 1, stale, -1); !errors.Is(err, ErrFenced) {
		t.Errorf("a create after the epoch moved: %v, want ErrFenced", err)
	}
	if _, _, ok, err := r.PartitionStateOf("f", 1); err != nil || ok {
		t.Errorf("partition 1's state exists (%v, %v) after a fenced create", ok, err)
	}
	if err := mine.SetTopicAssignment("f", Assignment{0: {2, 1}, 1: {2, 1}}); !errors.Is(err, ErrFenced) {
		t.Errorf("an assignment after the epoch moved: %v, want ErrFenced", err)
	}
}

// TestWritesFailOnceABrokerRegistered: a write guarded by the
// registrations' version (SeenRegistrations, read before the brokers) fails
// with ErrRegistered, writing nothing, once a broker has registered since,
// also one that registers again after its previous run's node went; with
// the version read again it succeeds. A failed guard on the registrations
// is not ErrFenced (the controller resigns only on that).
func TestWritesFailOnceABrokerRegistered(t *testing.T) {
	connect := zktest.Start(t)
	c := dial(t, testConfig(connect))
	r := ReplicationOn(c)
	if err := r.CreateTopic("g", Assignment{0: {1, 2}}); err != nil {
		t.Fatal(err)
	}
	_, fence, err := ElectionOn(c).IncrementEpoch()
	if err != nil {
		t.Fatal(err)
	}
	regs, err := r.Registrations()
	if err != nil {
		t.Fatal(err)
	}
	mine := r.Fenced(fence).SeenRegistrations(regs)
	st := PartitionState{Leader: 1, ISR: []wire.BrokerID{1, 2}}
	v, err := mine.WritePartitionState("g", 0, st, -1)
	if err != nil {
		t.Fatalf("a write with no registration since: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	reg, err := RegisterBroker(ctx, testConfig(connect), 1, "127.0.0.1", 9092)
	if err != nil {
		t.Fatal(err)
	}
	st.LeaderEpoch = 1
	if _, err := mine.WritePartitionState("g", 0, st, v); !errors.Is(err, ErrRegistered) || errors.Is(err, ErrFenced) {
		t.Fatalf("a write after a registration: %v, want ErrRegistered (and not ErrFenced)", err)
	}
	if got, _, _, err := r.PartitionStateOf("g", 0); err != nil || got.LeaderEpoch != 0 {
		t.Errorf("state after the refused write: %+v, %v; want leader epoch 0 kept", got, err)
	}
	if err := mine.SetTopicAssignment("g", Assignment{0: {2, 1}}); !errors.Is(err, ErrRegistered) {
		t.Errorf("an assignment after a registration: %v, want ErrRegistered", err)
	}

	if regs, err = r.Registrations(); err != nil {
		t.Fatal(err)
	}
	mine = mine.SeenRegistrations(regs)
	if v, err = mine.WritePartitionState("g", 0, st, v); err != nil {
		t.Fatalf("a write with the registrations read again: %v", err)
	}
	// The broker's next run: its node goes with the old one's Close and
	// comes back, and the version moves again.
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	reg, err = RegisterBroker(ctx, testConfig(connect), 1, "127.0.0.1", 9092)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	st.LeaderEpoch = 2
	if _, err := mine.WritePartitionState("g", 0, st, v); !errors.Is(err, ErrRegistered) {
		t.Fatalf("a write after the broker registered again: %v, want ErrRegistered", err)
	}
}
