package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/replica"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"
)

// startReplicated starts one broker with the replication layer on a real
// ZooKeeper, creates topic with one replica on it, waits for its leader and
// returns the ZooKeeper connect string and the broker.
func startReplicated(t *testing.T, topic string) (string, *brokertest.Broker) {
	t.Helper()
	connect := zktest.Start(t)
	cfg := brokertest.Config()
	cfg.EnableZookeeper = true
	cfg.ZkConnect = connect
	cfg.ZkSessionTimeout = 2 * time.Second
	reg := zkcoord.NewRegistrar(zkcoord.Config{Connect: connect, SessionTimeout: cfg.ZkSessionTimeout})
	t.Cleanup(func() { reg.Close() })
	cfg.Registrar = reg
	cfg.Layer = func(logs *log.Manager) (broker.Layer, error) {
		rc := replica.DefaultConfig()
		rc.BrokerID, rc.Logs = cfg.BrokerID, logs
		rc.ZK = zkcoord.Config{Connect: connect, SessionTimeout: cfg.ZkSessionTimeout}
		return replica.New(rc)
	}
	b := brokertest.Start(t, cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	zk, err := zkcoord.Dial(ctx, zkcoord.Config{Connect: connect})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zk.Close() })
	if err := zk.CreateTopic(topic, zkcoord.Assignment{0: {cfg.BrokerID}}); err != nil {
		t.Fatal(err)
	}
	wait.Within(t, 30*time.Second, "the topic to have a leader", func() bool {
		st, _, ok, err := zk.PartitionStateOf(topic, 0)
		return err == nil && ok && st.Leader == cfg.BrokerID
	})
	return connect, b
}

// TestPerfToolAcks: --request-required-acks sends PRODUCE_ACKS to a
// replicated topic's leader (from --broker-list or --zookeeper), sync and
// async, and the result records the setting.
func TestPerfToolAcks(t *testing.T) {
	dir := buildTools(t)
	connect, b := startReplicated(t, "acked")
	for _, args := range [][]string{
		{"--request-required-acks=-1", "--batch-size=50", "--broker-list=0:" + b.Addr},
		{"--request-required-acks=1", "--batch-size=20", "--async", "--zookeeper=" + connect},
		{"--request-required-acks=all", "--batch-size=10", "--threads=2", "--zookeeper=" + connect, "--request-timeout-ms=3000",
			"--message-send-max-retries=5", "--retry-backoff-ms=50"},
	} {
		args = append(args, "--topic=acked", "--messages=1000", "--message-size=100", "--json")
		r := runJSON(t, filepath.Join(dir, "kafka-producer-perf-test"), args...)
		want := -1
		if args[0] == "--request-required-acks=1" {
			want = 1
		}
		if r.Messages != 1000 || r.MsgsPerSec <= 0 || r.Acks == nil || *r.Acks != want {
			t.Errorf("%q: %+v, want 1000 messages with acks %d", args, r, want)
		}
	}
	r := runJSON(t, filepath.Join(dir, "kafka-consumer-perf-test"), "--broker-list=0:"+b.Addr, "--topic=acked",
		"--messages=3000", "--fetch-size=65536", "--json")
	if r.Messages != 3000 {
		t.Errorf("consumer read %d messages, want 3000", r.Messages)
	}
}
