package producer

import (
	"fmt"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"

	"github.com/netdb11/kafka/broker/wire"
)

// startRegistered starts a broker that registers in ZooKeeper.
func startRegistered(t *testing.T, connect string, id wire.BrokerID) *brokertest.Broker {
	t.Helper()
	cfg := brokertest.Config()
	cfg.BrokerID = id
	b, _ := zkbroker.Start(t, cfg, zkcoord.Config{Connect: connect, SessionTimeout: 2 * time.Second})
	return b
}

// With zk.connect, a new topic goes to partition 0 of every live broker (as
// 0.7), keyed messages follow the sorted (broker, partition) list, and a
// broker that leaves is dropped from it.
func TestZooKeeperDiscovery(t *testing.T) {
	connect := zktest.Start(t)
	b1 := startRegistered(t, connect, 1)
	b2 := startRegistered(t, connect, 2)

	cfg := DefaultConfig()
	cfg.ZkConnect = connect
	cfg.ConnectTimeout = 2 * time.Second
	p := newProducer(t, cfg)
	zc := p.zk
	wait.Within(t, 10*time.Second, "2 partitions of topic fresh", func() bool { return len(zc.Partitions("fresh")) == 2 })
	if got := fmt.Sprint(zc.Partitions("fresh")); got != "[1-0 2-0]" {
		t.Fatalf("a new topic's list = %s, want partition 0 of brokers 1 and 2", got)
	}

	// Keys that hash to index 0 and 1 of the list reach brokers 1 and 2.
	var k0, k1 []byte
	for i := 0; k0 == nil || k1 == nil; i++ {
		k := fmt.Appendf(nil, "key-%d", i)
		switch (DefaultPartitioner{}).Partition(k, 2) {
		case 0:
			k0 = k
		case 1:
			k1 = k
		}
	}
	if err := p.Send(t.Context(), "fresh", Message{Key: k0, Value: []byte("to-1")}, Message{Key: k1, Value: []byte("to-2")}); err != nil {
		t.Fatal(err)
	}
	if got := readPartition(t, b1.Addr, "fresh", 0, 1); fmt.Sprint(got) != "[to-1]" {
		t.Fatalf("broker 1 holds %q", got)
	}
	if got := readPartition(t, b2.Addr, "fresh", 0, 1); fmt.Sprint(got) != "[to-2]" {
		t.Fatalf("broker 2 holds %q", got)
	}

	// Broker 2 leaves: its registration goes and the producer follows.
	if err := b2.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := b2.Config.Registrar.(*zkcoord.Registrar).Close(); err != nil {
		t.Fatal(err)
	}
	wait.Within(t, 15*time.Second, "topic fresh on broker 1 only", func() bool { return fmt.Sprint(zc.Partitions("fresh")) == "[1-0]" })
	if err := p.Send(t.Context(), "fresh", Message{Key: k1, Value: []byte("after")}); err != nil {
		t.Fatal(err)
	}
	if got := readPartition(t, b1.Addr, "fresh", 0, 2); fmt.Sprint(got) != "[to-1 after]" {
		t.Fatalf("broker 1 holds %q", got)
	}
}
