package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
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

// startReplicated starts one broker with the replication layer and
// min.insync.replicas=2 on a real ZooKeeper, and creates topic with one
// replica on it: acks=1 is accepted, acks=-1 refused with NotEnoughReplicas.
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
		rc.BrokerID, rc.Logs, rc.MinInsyncReplicas = cfg.BrokerID, logs, 2
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

// TestConsoleProducerAcks: with --request-required-acks=1 every line is
// acknowledged and readable, exit 0; with -1 and too few in-sync replicas
// (min.insync.replicas=2, one replica) the tool exits 1 with one line
// saying how many lines were not acknowledged and why, sync and async.
func TestConsoleProducerAcks(t *testing.T) {
	dir := buildTools(t)
	prod := filepath.Join(dir, "kafka-console-producer")
	connect, b := startReplicated(t, "acked")
	runTool(t, prod, "a\nb\nc\n", "--sync", "--request-required-acks=1", "--zookeeper="+connect, "--topic=acked")
	runTool(t, prod, "d\n", "--request-required-acks=1", "--broker-list=0:"+b.Addr, "--topic=acked")
	out := runTool(t, filepath.Join(dir, "kafka-console-consumer"), "", "--broker-list=0:"+b.Addr, "--topic=acked",
		"--from-beginning", "--max-messages=4")
	if out != "a\nb\nc\nd\n" {
		t.Fatalf("consumer read %q", out)
	}
	for _, args := range [][]string{{"--sync"}, {}} {
		args = append(args, "--request-required-acks=-1", "--message-send-max-retries=1", "--retry-backoff-ms=10",
			"--broker-list=0:"+b.Addr, "--topic=acked")
		cmd := exec.Command(prod, args...)
		cmd.Stdin = strings.NewReader("x\ny\nz\n")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("%q: exit %v, want status 1; stderr:\n%s", args, err, stderr.String())
		}
		line := strings.TrimSpace(stderr.String())
		for _, want := range []string{"3 of 3 messages not acknowledged", "request.required.acks=-1",
			"not enough in-sync replicas", "topic acked partition 0", "broker 0"} {
			if strings.Count(line, "\n") != 0 || !strings.Contains(line, want) {
				t.Fatalf("%q: stderr %q, want one line with %q", args, line, want)
			}
		}
	}
	// Nothing of the refused lines was appended.
	out = runTool(t, filepath.Join(dir, "kafka-console-consumer"), "", "--broker-list=0:"+b.Addr, "--topic=acked",
		"--from-beginning", "--timeout=1s")
	if out != "a\nb\nc\nd\n" {
		t.Fatalf("after the refusals the consumer read %q", out)
	}
}
