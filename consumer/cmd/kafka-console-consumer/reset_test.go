package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/producer"
	"github.com/netdb11/kafka/zkcoord"
)

// Issue 11, case 9: --offset inside a message is a clear error, not
// "message at offset 3 is 201351252 bytes" or a wait forever.
func TestOffsetInsideAMessage(t *testing.T) {
	b := brokertest.Start(t, brokertest.Config())
	p, err := producer.New(func() producer.Config { c := producer.DefaultConfig(); c.BrokerList = "0:" + b.Addr; return c }())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Send(t.Context(), "t", producer.Message{Value: []byte("hello, world")}); err != nil {
		t.Fatal(err)
	}
	b.Flush(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err = run(ctx, []string{"--broker-list=0:" + b.Addr, "--topic=t", "--offset=3", "--max-messages=1"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "offset 3 is not a message boundary") {
		t.Fatalf("run = %v, want: offset 3 is not a message boundary", err)
	}
}

// Issue 11, case 6: a group whose committed offset retention deleted used
// to jump to the log end (the tool set autooffset.reset=largest), skipping
// every message still held, and say nothing. Now it restarts at the
// earliest offset held and prints the reset, with the bytes it skipped.
func TestGroupOffsetDeletedByRetention(t *testing.T) {
	connect, b, p := startZKBroker(t, 1, func(cfg *broker.Config) {
		cfg.Log.FileSize = 1000
		cfg.Log.RetentionSize = 2000
		cfg.Log.CleanupInterval = 20 * time.Millisecond
	})
	sendNumbered(t, p, "lines", "line-%03d", 0, 200)
	b.Flush(t)
	sc, err := consumer.NewSimpleConsumer(b.Addr, consumer.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var earliest, end wire.Offset
	wait.For(t, "retention to delete the first segments", func() bool {
		e, err1 := sc.OffsetsBefore(t.Context(), "lines", 0, wire.EarliestTime, 1)
		l, err2 := sc.OffsetsBefore(t.Context(), "lines", 0, wire.LatestTime, 1)
		if err1 != nil || err2 != nil || len(e) == 0 || len(l) == 0 {
			return false
		}
		earliest, end = e[0], l[0]
		return earliest > 0
	})
	held := int((end - earliest) / wire.Offset(wire.Overhead+len("line-000")))
	// The group had consumed nothing: its committed offset is 0, deleted.
	zc := zkbroker.Dial(t, zkcoord.Config{Connect: connect})
	zkbroker.WaitTopic(t, zc, "lines", 0, 1)
	if err := zkcoord.GroupsOn(zc).CommitOffset("g", "lines", wire.BrokerPartition{Broker: 0, Partition: 0}, 0); err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	args := []string{"--zookeeper=" + connect, "--topic=lines", "--group=g", "--backoff=20ms", fmt.Sprintf("--max-messages=%d", held)}
	if err := run(ctx, args, &out, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	lines := strings.Fields(out.String())
	first := fmt.Sprintf("line-%03d", 200-held)
	if len(lines) != held || lines[0] != first {
		t.Fatalf("got %d lines %.60q..., want the %d held from %s", len(lines), lines, held, first)
	}
	log := stderr.String()
	for _, want := range []string{"level=WARN", "is out of range", fmt.Sprintf("deleted_bytes=%d", earliest), "skipped_bytes=0"} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q:\n%s", want, log)
		}
	}
}
