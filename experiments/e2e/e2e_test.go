package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/replicatest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

func TestValidate(t *testing.T) {
	good := DefaultConfig()
	good.Broker, good.Topic = "127.0.0.1:1", "t"
	if err := good.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	for _, c := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no broker", func(c *Config) { c.Broker = "" }, "no broker"},
		{"bad topic", func(c *Config) { c.Topic = "a/b" }, "topic"},
		{"acks 0", func(c *Config) { c.Acks = 0 }, "acks=0"},
		{"negative rate", func(c *Config) { c.Rate = -1 }, "rate"},
		{"no duration", func(c *Config) { c.Duration = 0 }, "duration"},
		{"tiny message", func(c *Config) { c.MessageSize = PayloadHeader - 1 }, "message size"},
		{"no linger", func(c *Config) { c.Linger = 0 }, "linger"},
		{"no connections", func(c *Config) { c.Rate, c.Connections = 0, 0 }, "connections"},
		{"no timeout", func(c *Config) { c.Timeout = 0 }, "timeout"},
	} {
		cfg := good
		c.mod(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate = %v, want an error about %q", c.name, err, c.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 1000; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	p := Summarize(ds)
	if p.N != 1000 || p.P50 != 501 || p.P99 != 991 || p.P999 != 1000 || p.Max != 1000 {
		t.Fatalf("Summarize = %+v", p)
	}
	if (Summarize(nil) != Percentiles{}) {
		t.Fatal("Summarize(nil) is not zero")
	}
}

// startCluster starts n brokers with the replication layer on a real
// ZooKeeper, each flushing every message (consumers see only flushed
// messages), and returns their addresses and a ZooKeeper connection.
func startCluster(t *testing.T, n int) ([]string, *zkcoord.Conn) {
	t.Helper()
	c := replicatest.StartCluster(t, n, func(cfg *replicatest.Settings) { cfg.Log.FlushInterval = 1 })
	var addrs []string
	for id := range n {
		addrs = append(addrs, c.Nodes[wire.BrokerID(id)].B.Addr)
	}
	return addrs, c.ZK
}

// TestRunAgainstReplicatedCluster measures a real three-broker cluster:
// at a fixed rate every acknowledged message reaches the consumer and has
// an end-to-end time at least its acknowledgement's median; as fast as
// possible with acks=-1 some messages are acknowledged.
func TestRunAgainstReplicatedCluster(t *testing.T) {
	addrs, zk := startCluster(t, 3)
	if err := zkcoord.ReplicationOn(zk).CreateTopic("lat", zkcoord.Assignment{0: {0, 1, 2}}); err != nil {
		t.Fatal(err)
	}
	wait.Within(t, 30*time.Second, "lat-0 to have a leader and three in sync", func() bool {
		st, _, ok, err := zkcoord.ReplicationOn(zk).PartitionStateOf("lat", 0)
		return err == nil && ok && st.Leader >= 0 && len(st.ISR) == 3
	})
	cfg := DefaultConfig()
	cfg.Broker, cfg.Topic, cfg.Acks = addrs[2], "lat", wire.AcksAll
	cfg.Rate, cfg.Duration = 2000, 700*time.Millisecond
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Messages < 1000 || res.Received != res.Messages || res.EndToEnd.N != int(res.Messages) || res.Ack.N != int(res.Messages) {
		t.Fatalf("at 2000 msg/s for 0.7 s: %d acknowledged, %d received, %d end-to-end and %d ack times", res.Messages, res.Received, res.EndToEnd.N, res.Ack.N)
	}
	if st, _, _, _ := zkcoord.ReplicationOn(zk).PartitionStateOf("lat", 0); res.Leader != st.Leader {
		t.Errorf("measured against broker %d, the leader is %d", res.Leader, st.Leader)
	}
	for _, p := range []Percentiles{res.Ack, res.EndToEnd} {
		if p.P50 <= 0 || p.P50 > p.P99 || p.P99 > p.P999 || p.P999 > p.Max {
			t.Errorf("percentiles out of order: %+v", p)
		}
	}
	cfg.Rate, cfg.Consume = 0, false
	res, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Messages == 0 || res.Messages%int64(cfg.BatchSize) != 0 || res.EndToEnd.N != 0 || res.MsgsPerSec <= 0 {
		t.Fatalf("as fast as possible: %+v", res)
	}
	// A topic nobody created has no leader: a clear error once the timeout
	// passes.
	cfg.Topic, cfg.Timeout = "missing", 300*time.Millisecond
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "no live leader") {
		t.Fatalf("Run on a missing topic = %v", err)
	}
	if _, err := Run(context.Background(), Config{}); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("Run with an empty config = %v", err)
	}
}
