package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/producer"
	"github.com/netdb11/kafka/zkcoord"
)

// In --zookeeper mode the console consumer is a group member: it reads
// every partition, commits its offsets at exit, and a later run of the same
// group resumes where the last one stopped.
func TestGroupModeResumesFromCommittedOffsets(t *testing.T) {
	connect, b, p := startZKBroker(t, 2, nil)
	send := func(from, to int) {
		t.Helper()
		// Partition -1: the broker spreads them over its two partitions.
		sendNumbered(t, p, "lines", "line-%02d", from, to)
		b.Flush(t)
	}
	consume := func(args ...string) []string {
		t.Helper()
		return runSorted(t, append([]string{"--zookeeper=" + connect, "--topic=lines", "--group=g", "--backoff=20ms"}, args...)...)
	}

	send(0, 10)
	waitRegistered(t, connect, "lines")
	first := consume("--from-beginning", "--max-messages=10")
	if len(first) != 10 || first[0] != "line-00" || first[9] != "line-09" {
		t.Fatalf("first run got %q", first)
	}
	send(10, 13)
	second := consume("--max-messages=3")
	if fmt.Sprint(second) != "[line-10 line-11 line-12]" {
		t.Fatalf("second run got %q, want exactly the three new lines", second)
	}
}

// waitRegistered waits until broker 0's registration of topic with two
// partitions is visible, so the group sees both partitions at its first
// rebalance.
func waitRegistered(t *testing.T, connect, topic string) {
	t.Helper()
	zkbroker.WaitTopic(t, zkbroker.Dial(t, zkcoord.Config{Connect: connect}), topic, 0, 2)
}

// startZKBroker starts a ZooKeeper and a broker registered in it whose new
// topics get partitions partitions (mod, if set, changes the broker's
// configuration further), and a producer to the broker, closed when the
// test ends. It returns the ZooKeeper connect string.
func startZKBroker(t *testing.T, partitions int, mod func(*broker.Config)) (string, *brokertest.Broker, *producer.Producer) {
	t.Helper()
	cfg := brokertest.Config()
	cfg.Log.NumPartitions = partitions
	if mod != nil {
		mod(&cfg)
	}
	connect, b := zkbroker.StartInChroot(t, cfg)
	pc := producer.DefaultConfig()
	pc.BrokerList = "0:" + b.Addr
	p, err := producer.New(pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return connect, b, p
}

// sendNumbered sends messages from to to-1 of topic, message i's value
// format with i, one request each.
func sendNumbered(t *testing.T, p *producer.Producer, topic, format string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := p.Send(t.Context(), topic, producer.Message{Value: fmt.Appendf(nil, format, i)}); err != nil {
			t.Fatal(err)
		}
	}
}

// runSorted runs the tool with args, for at most 60 s, and returns the
// lines it printed, sorted (a group reads partitions in no fixed order).
func runSorted(t *testing.T, args ...string) []string {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := run(ctx, args, &out, io.Discard); err != nil {
		t.Fatalf("run %q: %v", args, err)
	}
	lines := strings.Fields(out.String())
	sort.Strings(lines)
	return lines
}
