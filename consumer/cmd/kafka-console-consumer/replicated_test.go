package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/replicatest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"
)

// replicaBroker starts broker id with the replication layer.
func replicaBroker(t *testing.T, connect string, id wire.BrokerID) (*brokertest.Broker, *zkcoord.Registrar) {
	t.Helper()
	return replicatest.Start(t, replicatest.Config(id, connect))
}

// With --broker-list naming every replica of an RF=3 topic, the console
// consumer reads the partition once, from its leader, and when the leader
// stops it continues on the new one from the same offset.
func TestBrokerListReadsReplicatedTopicFromLeader(t *testing.T) {
	connect := zktest.Start(t)
	zc := zkbroker.Dial(t, zkcoord.Config{Connect: connect})
	brokers := map[wire.BrokerID]*brokertest.Broker{}
	regs := map[wire.BrokerID]*zkcoord.Registrar{}
	var list []string
	for id := wire.BrokerID(0); id < 3; id++ {
		brokers[id], regs[id] = replicaBroker(t, connect, id)
		list = append(list, fmt.Sprintf("%d:%s", id, brokers[id].Addr))
	}
	if err := zkcoord.ReplicationOn(zc).CreateTopic("r", zkcoord.Assignment{0: {0, 1, 2}}); err != nil {
		t.Fatal(err)
	}
	produce := func(from, to int) {
		t.Helper()
		var ps [][]byte
		for i := from; i < to; i++ {
			ps = append(ps, fmt.Appendf(nil, "m-%03d", i))
		}
		wait.Within(t, 60*time.Second, "acks=all", func() bool {
			info, _, err := zkcoord.GroupsOn(zc).PartitionLeader("r", 0)
			return err == nil && replicatest.ProduceAcks(info.Addr(), "r", 0, wire.NewMessageSet(ps...)) == nil
		})
	}
	produce(0, 100)

	var out brokertest.Buffer
	lines := func() []string { return strings.Fields(out.String()) }
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--broker-list=" + strings.Join(list, ","), "--topic=r", "--from-beginning",
			"--max-messages=150", "--backoff=20ms"}, &out, io.Discard)
	}()
	wait.Within(t, 60*time.Second, "the first 100 lines", func() bool { return len(lines()) >= 100 })
	info, _, err := zkcoord.GroupsOn(zc).PartitionLeader("r", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := regs[info.ID].Close(); err != nil {
		t.Fatal(err)
	}
	if err := brokers[info.ID].Stop(); err != nil {
		t.Fatal(err)
	}
	produce(100, 150) // to the new leader
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := lines()
	if len(got) != 150 {
		t.Fatalf("%d lines, want 150 (each message once): %q", len(got), got)
	}
	for i, l := range got {
		if want := fmt.Sprintf("m-%03d", i); l != want {
			t.Fatalf("line %d = %q, want %q", i, l, want)
		}
	}
}
