package controller

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"
)

// TestStateWrittenAcrossARegistrationIsRefused: a controller decides a
// partition on the brokers and epochs it read; a broker that registers
// between that read and the state's write restarted unseen, and the write
// must not land, or the state, written after the registration, makes the
// restart look seen. The soak's compound seed 49 (4 December, pass 10):
// faults-2's leader, broker 3, lost power and registered again while a new
// controller, on its earlier view, wrote the state that dropped dead broker
// 1 from the ISR and kept 3 as leader; 3 led with its cut log and broker 2
// truncated 1,157,087 bytes of acknowledged writes to it.
//
// Here the test holds the controller's view (registrations, live brokers,
// epochs) while broker 3 registers again, then lets the controller decide
// on it: the write fails with ErrRegistered and the state is kept; decided
// again on a fresh view, broker 3 counts as restarted and the intact
// member, broker 2, leads. Before the registrations' guard the first
// decision wrote {leader 3, ISR [3 2]} and the second kept broker 3 as
// leader, with the log it had cut.
func TestStateWrittenAcrossARegistrationIsRefused(t *testing.T) {
	connect := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := zkcoord.Config{Connect: connect, SessionTimeout: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	zk, err := zkcoord.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer zk.Close()
	register := func(id wire.BrokerID) *zkcoord.BrokerRegistration {
		r, err := zkcoord.RegisterBroker(ctx, cfg, id, "127.0.0.1", 9090+int(id))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	regs := map[wire.BrokerID]*zkcoord.BrokerRegistration{1: register(1), 2: register(2), 3: register(3)}
	const topic = "straddle"
	replicas := []wire.BrokerID{3, 1, 2}
	state := zkcoord.ReplicationOn(zk)
	if err := state.CreateTopic(topic, zkcoord.Assignment{0: replicas}); err != nil {
		t.Fatal(err)
	}
	if _, err := state.WritePartitionState(topic, 0, zkcoord.PartitionState{Leader: 3, ISR: replicas}, -1); err != nil {
		t.Fatal(err)
	}
	// Broker 1 dies.
	if err := regs[1].Close(); err != nil {
		t.Fatal(err)
	}

	c := New(Config{BrokerID: 2, MinInsyncReplicas: 2})
	epoch, fence, err := zkcoord.ElectionOn(zk).IncrementEpoch()
	if err != nil {
		t.Fatal(err)
	}
	c.zk, c.registry, c.epoch = zk, zkcoord.RegistryOn(zk), epoch
	c.state = state.Fenced(fence)
	noEnds := func(wire.BrokerID, string, wire.Partition) (zkcoord.LogEnd, bool) { return zkcoord.LogEnd{}, false }
	view := func() (map[wire.BrokerID]zkcoord.BrokerInfo, map[wire.BrokerID]int64) {
		v, err := c.state.Registrations()
		if err != nil {
			t.Fatal(err)
		}
		c.state = c.state.SeenRegistrations(v)
		live, err := c.registry.Brokers(false)
		if err != nil {
			t.Fatal(err)
		}
		epochs, err := c.state.BrokerEpochs()
		if err != nil {
			t.Fatal(err)
		}
		return live, epochs
	}
	live, epochs := view()
	if _, ok := live[1]; ok || len(live) != 2 {
		t.Fatalf("live brokers %v: want 2 and 3", live)
	}

	// Broker 3 restarts inside the controller's decision: its node goes
	// and comes back in a new session.
	if err := regs[3].Close(); err != nil {
		t.Fatal(err)
	}
	regs[3] = register(3)

	if _, _, err := c.partition(topic, 0, replicas, live, epochs, noEnds, false); !errors.Is(err, zkcoord.ErrRegistered) {
		t.Errorf("deciding on the view from before broker 3's registration: %v, want ErrRegistered", err)
	}
	live, epochs = view()
	pl, changed, err := c.partition(topic, 0, replicas, live, epochs, noEnds, false)
	if err != nil {
		t.Fatal(err)
	}
	st, _, _, err := state.PartitionStateOf(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !changed || pl == nil || st.Leader != 2 {
		t.Errorf("decided again: leader %d, ISR %v, epoch %d (changed %v): want broker 2 to lead, broker 3 having restarted since the state was written",
			st.Leader, st.ISR, st.LeaderEpoch, changed)
	}
}
