package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/replicatest"
	"github.com/netdb11/kafka/zkcoord"
)

// startReplicated starts one broker with the replication layer and
// min.insync.replicas=2 on a real ZooKeeper, and creates topic with one
// replica on it: acks=1 is accepted, acks=-1 refused with NotEnoughReplicas.
func startReplicated(t *testing.T, topic string) (string, *brokertest.Broker) {
	t.Helper()
	c := replicatest.StartCluster(t, 1, func(cfg *replicatest.Settings) { cfg.Replica.MinInsyncReplicas = 2 })
	c.CreateTopic(topic, zkcoord.Assignment{0: {0}})
	c.WaitISR(topic, 0, 1)
	return c.Connect, c.Nodes[0].B
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
	// A sync run whose first send is refused counts every line it was
	// given. Before, 30 lines gave "1 of 1 messages not acknowledged" (the
	// 29 never tried were not counted).
	cmd := exec.Command(prod, "--sync", "--batch-size=1", "--request-required-acks=-1", "--message-send-max-retries=1",
		"--retry-backoff-ms=10", "--broker-list=0:"+b.Addr, "--topic=acked")
	cmd.Stdin = strings.NewReader(strings.Repeat("line\n", 29) + "last line without a newline")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "30 of 30 messages not acknowledged, 29 never sent (request.required.acks=-1;") {
		t.Fatalf("30 lines, first send refused: %v; stderr %q", err, stderr.String())
	}
	// Nothing of the refused lines was appended.
	out = runTool(t, filepath.Join(dir, "kafka-console-consumer"), "", "--broker-list=0:"+b.Addr, "--topic=acked",
		"--from-beginning", "--timeout=1s")
	if out != "a\nb\nc\nd\n" {
		t.Fatalf("after the refusals the consumer read %q", out)
	}
}

// TestConsoleProducerSaysNotReplicated: the README's replication example
// run against a topic that was never created (a 0.7 topic) with
// --request-required-acks=-1 still delivers, exit 0, and says once on
// stderr that the topic is not replicated; to a replicated topic it says
// nothing. Before (issue 26, item 2) stderr was empty in both cases.
func TestConsoleProducerSaysNotReplicated(t *testing.T) {
	dir := buildTools(t)
	prod := filepath.Join(dir, "kafka-console-producer")
	connect, _ := startReplicated(t, "r")
	const want = "kafka-console-producer: topic r3 is not replicated: acknowledged by its one broker"
	for _, args := range [][]string{{"--sync"}, {}} {
		for _, topic := range []string{"r3", "r"} {
			args := append(args, "--zookeeper="+connect, "--topic="+topic, "--request-required-acks=1")
			cmd := exec.Command(prod, args...)
			cmd.Stdin = strings.NewReader("hi\nthere\nagain\n")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%q: %v\n%s", args, err, stderr.String())
			}
			got := stderr.String()
			if topic == "r" {
				if got != "" {
					t.Fatalf("%q: stderr %q, want nothing for a replicated topic", args, got)
				}
				continue
			}
			if strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, want) || !strings.Contains(got, "request.required.acks=1") {
				t.Fatalf("%q: stderr %q, want one line starting %q", args, got, want)
			}
		}
	}
}
