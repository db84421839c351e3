package main

import (
	"bytes"
	"context"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/zkcoord"
)

// --whitelist and --blacklist read every topic the regex takes (or leaves).
func TestWhitelistAndBlacklist(t *testing.T) {
	connect, b, p := startZKBroker(t, 2, nil)
	for _, topic := range []string{"logs-a", "logs-b", "metrics"} {
		sendNumbered(t, p, topic, topic+"-%d", 0, 4)
		waitRegistered(t, connect, topic)
	}
	b.Flush(t)
	consume := func(args ...string) string {
		t.Helper()
		return strings.Join(runSorted(t, append([]string{"--zookeeper=" + connect, "--backoff=20ms", "--from-beginning"}, args...)...), " ")
	}
	if got, want := consume("--whitelist=logs-.*", "--max-messages=8"),
		"logs-a-0 logs-a-1 logs-a-2 logs-a-3 logs-b-0 logs-b-1 logs-b-2 logs-b-3"; got != want {
		t.Fatalf("--whitelist got %q, want %q", got, want)
	}
	// Nothing but metrics may arrive within the timeout.
	if got, want := consume("--blacklist=logs-a, logs-b", "--timeout=1s"), "metrics-0 metrics-1 metrics-2 metrics-3"; got != want {
		t.Fatalf("--blacklist got %q, want %q", got, want)
	}
}

func TestFilterFlagsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--zookeeper=127.0.0.1:1", "--topic=a", "--whitelist=a"},
		{"--zookeeper=127.0.0.1:1", "--whitelist=a", "--blacklist=b"},
		{"--zookeeper=127.0.0.1:1"},
		{"--broker-list=0:127.0.0.1:1", "--whitelist=a"},
		{"--zookeeper=127.0.0.1:1", "--whitelist=(a"},
	} {
		err := run(t.Context(), args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("run %q = %v, want a flag error", args, err)
		}
	}
}

// Without --from-beginning, --whitelist skips what the topics held at the
// start but prints a topic created later from its first message.
func TestWhitelistNewTopicFromItsStart(t *testing.T) {
	connect, _, p := startZKBroker(t, 2, nil)
	send := func(topic string, from, to int) {
		t.Helper()
		sendNumbered(t, p, topic, topic+"-%d", from, to)
	}
	send("w-old", 0, 3)
	waitRegistered(t, connect, "w-old")
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--zookeeper=" + connect, "--whitelist=w-.*", "--group=g", "--backoff=20ms", "--max-messages=3"}, &out, io.Discard)
	}()
	zc := zkbroker.Dial(t, zkcoord.Config{Connect: connect})
	wait.Within(t, 60*time.Second, "the console consumer to own w-old", func() bool {
		names, err := zc.Children(zkcoord.OwnersPath("g", "w-old"))
		return err == nil && len(names) == 2
	})
	send("w-new", 0, 3)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(out.String())
	sort.Strings(lines)
	if got := strings.Join(lines, " "); got != "w-new-0 w-new-1 w-new-2" {
		t.Fatalf("got %q, want the new topic's three messages and none of the old one's", got)
	}
}
