package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/producer"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/spf13/pflag"

	"github.com/netdb11/kafka/broker/wire"
)

func TestHelpAndBadFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &out, &errOut); err != pflag.ErrHelp {
		t.Fatalf("--help: %v", err)
	}
	for _, opt := range []string{"--zookeeper", "--group", "--topic", "--timeout"} {
		if !strings.Contains(errOut.String(), opt) {
			t.Errorf("--help does not describe %s:\n%s", opt, errOut.String())
		}
	}
	if err := run(context.Background(), nil, &out, &errOut); err == nil || !strings.Contains(err.Error(), "--group") {
		t.Fatalf("no --group: %v", err)
	}
	if err := run(context.Background(), []string{"--group=g", "extra"}, &out, &errOut); err == nil {
		t.Fatal("an extra argument was accepted")
	}
}

func TestChecker(t *testing.T) {
	cfg := brokertest.Config()
	cfg.BrokerID = 3
	cfg.Log.NumPartitions = 2
	zk, b := zkbroker.StartInChroot(t, cfg)

	pcfg := producer.DefaultConfig()
	pcfg.BrokerList = fmt.Sprintf("3:%s", b.Addr)
	p, err := producer.New(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if err := p.Send(context.Background(), "t", producer.Message{Value: []byte("hello")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	conn := zkbroker.Dial(t, zkcoord.Config{Connect: zk})
	zkbroker.WaitTopic(t, conn, "t", 3, 2)
	if err := conn.CommitOffset("g", "t", wire.BrokerPartition{Broker: 3, Partition: 0}, 0); err != nil {
		t.Fatal(err)
	}
	if err := conn.ClaimPartition("g", "t", wire.BrokerPartition{Broker: 3, Partition: 0}, "g_c-0"); err != nil {
		t.Fatal(err)
	}

	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"--zookeeper=" + zk, "--group=g"}, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("output:\n%s\nwant a header, 2 partitions and the broker info", out.String())
	}
	if !regexp.MustCompile(`^Group\s+Topic\s+Pid\s+Offset\s+logSize\s+Lag\s+Owner$`).MatchString(lines[0]) {
		t.Fatalf("header %q", lines[0])
	}
	// Partition 3-0: committed 0, owned; 3-1: no offset, no owner.
	row0 := regexp.MustCompile(`^g\s+t\s+3-0\s+0\s+(\d+)\s+(\d+)\s+g_c-0$`).FindStringSubmatch(lines[1])
	if row0 == nil || row0[1] != row0[2] {
		t.Fatalf("row %q: want offset 0, lag = log size, owner g_c-0", lines[1])
	}
	if !regexp.MustCompile(`^g\s+t\s+3-1\s+-\s+\d+\s+-\s+none$`).MatchString(lines[2]) {
		t.Fatalf("row %q: want no offset and no owner", lines[2])
	}
	if lines[3] != "BROKER INFO" || lines[4] != "3 -> "+b.Addr {
		t.Fatalf("broker info %q", lines[3:])
	}
	if err := run(context.Background(), []string{"--zookeeper=" + zk, "--group=nobody"}, &out, &errOut); err == nil {
		t.Fatal("a group without offsets gave no error")
	}

	// --watch prints the table again until interrupted, then exits 0.
	var watched brokertest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--zookeeper=" + zk, "--group=g", "--watch=10ms"}, &watched, &errOut)
	}()
	wait.For(t, "two tables", func() bool { return strings.Count(watched.String(), "BROKER INFO") >= 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("--watch ended with %v", err)
	}
	if got := watched.String(); !strings.HasPrefix(got, "== ") || !strings.Contains(got, "g_c-0") {
		t.Fatalf("--watch output:\n%s", got)
	}
}
