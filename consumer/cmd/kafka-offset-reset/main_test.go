package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/producer"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/spf13/pflag"
)

func TestParseTo(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"earliest", wire.EarliestTime},
		{"smallest", wire.EarliestTime},
		{"latest", wire.LatestTime},
		{"largest", wire.LatestTime},
		{"1307872800000", 1307872800000},
		{"2011-06-12T10:00:00Z", 1307872800000},
	}
	for _, tt := range tests {
		if got, err := parseTo(tt.in); err != nil || got != tt.want {
			t.Errorf("parseTo(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "-5", "2011-06-12"} {
		if _, err := parseTo(bad); err == nil {
			t.Errorf("parseTo(%q) succeeded", bad)
		}
	}
}

func TestHelpAndRequiredFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &out, &errOut); err != pflag.ErrHelp {
		t.Fatalf("--help: %v", err)
	}
	for _, opt := range []string{"--zookeeper", "--group", "--topic", "--to", "--dry-run", "--timeout"} {
		if !strings.Contains(errOut.String(), opt) {
			t.Errorf("--help does not describe %s", opt)
		}
	}
	if err := run(context.Background(), []string{"--group=g", "--topic=t"}, &out, &errOut); err == nil {
		t.Fatal("missing --to was accepted")
	}
	if err := run(context.Background(), []string{"--group=g", "--topic=t", "--to=soon"}, &out, &errOut); err == nil {
		t.Fatal("--to=soon was accepted")
	}
}

func TestReset(t *testing.T) {
	cfg := brokertest.Config()
	cfg.Log.NumPartitions = 1
	zk, b := zkbroker.StartInChroot(t, cfg)
	pcfg := producer.DefaultConfig()
	pcfg.BrokerList = fmt.Sprintf("0:%s", b.Addr)
	p, err := producer.New(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := p.Send(context.Background(), "t", producer.Message{Value: []byte("0123456789")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	conn := zkbroker.Dial(t, zkcoord.Config{Connect: zk})
	zkbroker.WaitTopic(t, conn, "t", 0, 1)
	end := wire.Offset(10 * len(wire.AppendMessage(nil, []byte("0123456789"))))
	bp := wire.BrokerPartition{}
	if err := zkcoord.GroupsOn(conn).CommitOffset("g", "t", bp, end); err != nil {
		t.Fatal(err)
	}
	args := []string{"--zookeeper=" + zk, "--group=g", "--topic=t"}

	var out, errOut bytes.Buffer
	if err := run(context.Background(), append(args, "--to=earliest", "--dry-run"), &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("t 0-0: %d -> 0\ndry run: would update the offset for 1 partitions\n", end); out.String() != want {
		t.Fatalf("dry run output %q, want %q", out.String(), want)
	}
	if off, _, _ := zkcoord.GroupsOn(conn).Offset("g", "t", bp); off != end {
		t.Fatalf("dry run changed the offset to %d", off)
	}
	out.Reset()
	if err := run(context.Background(), append(args, "--to=earliest"), &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if off, _, _ := zkcoord.GroupsOn(conn).Offset("g", "t", bp); off != 0 || !strings.HasSuffix(out.String(), "updated the offset for 1 partitions\n") {
		t.Fatalf("after --to=earliest: offset %d, output %q", off, out.String())
	}
	out.Reset()
	if err := run(context.Background(), append(args, "--to=latest"), &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if off, _, _ := zkcoord.GroupsOn(conn).Offset("g", "t", bp); off != end {
		t.Fatalf("after --to=latest: offset %d, want %d", off, end)
	}

	// A live member blocks the reset.
	sub, _ := zkcoord.StaticSubscription(map[string]int{"t": 1})
	if err := zkcoord.GroupsOn(conn).RegisterConsumer("g", "g_live", sub); err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), append(args, "--to=earliest"), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "g_live") {
		t.Fatalf("reset with a live consumer: %v, want an error naming it", err)
	}
}
