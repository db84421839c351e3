package zkcoord

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/zkcoord/zktest"

	"github.com/netdb11/kafka/broker/wire"
)

func watchCluster(t *testing.T, cfg Config) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := WatchCluster(ctx, cfg)
	if err != nil {
		t.Fatalf("WatchCluster: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func partitionsString(ps []wire.BrokerPartition) string { return fmt.Sprint(ps) }

func bp(b wire.BrokerID, p wire.Partition) wire.BrokerPartition {
	return wire.BrokerPartition{Broker: b, Partition: p}
}

// waitPartitions waits until the cluster's list for topic is want.
func waitPartitions(t *testing.T, c *Cluster, topic string, want []wire.BrokerPartition) {
	t.Helper()
	wait.Within(t, testTimeout, fmt.Sprintf("partitions of %s to be %v", topic, want), func() bool {
		changed := c.Changed()
		if reflect.DeepEqual(c.Partitions(topic), want) {
			return true
		}
		select {
		case <-changed:
		case <-time.After(testTimeout):
		}
		return false
	})
}

func TestClusterFollowsBrokersAndTopics(t *testing.T) {
	connect := zktest.Start(t)
	cl := watchCluster(t, testConfig(connect))

	if got := cl.Partitions("t"); len(got) != 0 {
		t.Fatalf("Partitions with no broker = %v, want none", got)
	}
	b1 := registerBroker(t, testConfig(connect), 1, "127.0.0.1", 9001)
	b2 := registerBroker(t, testConfig(connect), 2, "127.0.0.1", 9002)
	wait.Within(t, testTimeout, "two live brokers", func() bool { return len(cl.Brokers()) == 2 })
	if b, ok := cl.Broker(2); !ok || b.Addr() != "127.0.0.1:9002" {
		t.Fatalf("Broker(2) = %v, %v", b, ok)
	}

	// A topic nobody registered: partition 0 of every live broker (0.7).
	if got, want := cl.Partitions("new"), []wire.BrokerPartition{bp(1, 0), bp(2, 0)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Partitions(new topic) = %v, want %v", got, want)
	}
	// Broker 1 registers it with 3 partitions; broker 2 keeps its partition
	// 0 in the list until it registers the topic itself (0.7's merge).
	if err := b1.RegisterTopic("new", 3); err != nil {
		t.Fatal(err)
	}
	waitPartitions(t, cl, "new", []wire.BrokerPartition{bp(1, 0), bp(1, 1), bp(1, 2), bp(2, 0)})
	if err := b2.RegisterTopic("new", 2); err != nil {
		t.Fatal(err)
	}
	waitPartitions(t, cl, "new", []wire.BrokerPartition{bp(1, 0), bp(1, 1), bp(1, 2), bp(2, 0), bp(2, 1)})

	// A topic registered before the producer asks: exactly the registration.
	if err := b2.RegisterTopic("only2", 2); err != nil {
		t.Fatal(err)
	}
	wait.Within(t, testTimeout, "topic only2 to be registered", func() bool { return cl.Registered("only2") })
	waitPartitions(t, cl, "only2", []wire.BrokerPartition{bp(2, 0), bp(2, 1)})

	// Broker 2 leaves: dropped everywhere. It comes back: followed again.
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
	waitPartitions(t, cl, "new", []wire.BrokerPartition{bp(1, 0), bp(1, 1), bp(1, 2)})
	if _, ok := cl.Broker(2); ok {
		t.Fatal("broker 2 still live after leaving")
	}
	// only2 has no partition left: it falls back to partition 0 of broker 1.
	if got, want := cl.Partitions("only2"), []wire.BrokerPartition{bp(1, 0)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Partitions(only2) after its broker left = %v, want %v", got, want)
	}
	b2 = registerBroker(t, testConfig(connect), 2, "127.0.0.1", 9002)
	if err := b2.RegisterTopic("new", 2); err != nil {
		t.Fatal(err)
	}
	waitPartitions(t, cl, "new", []wire.BrokerPartition{bp(1, 0), bp(1, 1), bp(1, 2), bp(2, 0), bp(2, 1)})
}

// TestClusterAfterExpiry: the producer's view keeps following the registry
// after its own session expired (all its watches were lost with it).
func TestClusterAfterExpiry(t *testing.T) {
	connect := zktest.Start(t)
	link := zktest.NewLink()
	cfg := testConfig(connect)
	cfg.Dial = link.Dial
	cl := watchCluster(t, cfg)
	b1 := registerBroker(t, testConfig(connect), 1, "127.0.0.1", 9001)
	if err := b1.RegisterTopic("t", 1); err != nil {
		t.Fatal(err)
	}
	waitPartitions(t, cl, "t", []wire.BrokerPartition{bp(1, 0)})

	// An ephemeral marker of the cluster's session tells when it expired.
	if err := cl.conn.CreateEphemeral("/marker", nil); err != nil {
		t.Fatal(err)
	}
	observer := dial(t, testConfig(connect))
	expire(t, link, observer, "/marker")

	b2 := registerBroker(t, testConfig(connect), 2, "127.0.0.1", 9002)
	if err := b2.RegisterTopic("t", 2); err != nil {
		t.Fatal(err)
	}
	waitPartitions(t, cl, "t", []wire.BrokerPartition{bp(1, 0), bp(2, 0), bp(2, 1)})
}
