package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/consumer/group"
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

// startWithMessages starts broker 3 (two partitions per topic) in a fresh
// chroot and sends n messages to topic t through it.
func startWithMessages(t *testing.T, n int) (zk string, b *brokertest.Broker) {
	t.Helper()
	cfg := brokertest.Config()
	cfg.BrokerID = 3
	cfg.Log.NumPartitions = 2
	zk, b = zkbroker.StartInChroot(t, cfg)
	pcfg := producer.DefaultConfig()
	pcfg.BrokerList = fmt.Sprintf("3:%s", b.Addr)
	p, err := producer.New(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := p.Send(context.Background(), "t", producer.Message{Value: []byte("hello")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return zk, b
}

func TestChecker(t *testing.T) {
	zk, b := startWithMessages(t, 20)
	conn := zkbroker.Dial(t, zkcoord.Config{Connect: zk})
	zkbroker.WaitTopic(t, conn, "t", 3, 2)
	if err := zkcoord.GroupsOn(conn).CommitOffset("g", "t", wire.BrokerPartition{Broker: 3, Partition: 0}, 0); err != nil {
		t.Fatal(err)
	}
	if err := zkcoord.GroupsOn(conn).ClaimPartition("g", "t", wire.BrokerPartition{Broker: 3, Partition: 0}, "g_c-0"); err != nil {
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

// TestCheckerBeforeFirstCommit: a group whose consumer owns the partitions
// but has committed nothing yet is shown, its partitions with offset "-"
// and their owner, exit 0; a topic named with --topic that has no
// partitions keeps a row of its own. Before (issue 26, item 6) the tool
// exited 1 with "no offsets and no registered partitions": it looked for
// the group's topics among its offsets only.
func TestCheckerBeforeFirstCommit(t *testing.T) {
	zk, _ := startWithMessages(t, 10)
	conn := zkbroker.Dial(t, zkcoord.Config{Connect: zk})
	zkbroker.WaitTopic(t, conn, "t", 3, 2)

	gcfg := group.DefaultConfig()
	gcfg.GroupID, gcfg.ZkConnect = "fresh", zk
	gcfg.AutoCommit = false
	gcfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	gc, err := group.New(t.Context(), gcfg, map[string]int{"t": 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gc.Close() })
	wait.For(t, "the consumer to own both partitions", func() bool {
		for pn := range 2 {
			if _, ok, err := zkcoord.GroupsOn(conn).PartitionOwner("fresh", "t", wire.BrokerPartition{Broker: 3, Partition: wire.Partition(pn)}); err != nil || !ok {
				return false
			}
		}
		return true
	})

	for _, tc := range []struct {
		args []string
		rows []string
	}{
		{nil, []string{`^fresh\s+t\s+3-0\s+-\s+\d+\s+-\s+fresh_\S+$`, `^fresh\s+t\s+3-1\s+-\s+\d+\s+-\s+fresh_\S+$`}},
		{[]string{"--topic=t,nosuch,a"}, []string{`^fresh\s+a\s+-\s+-\s+-\s+-\s+none$`,
			`^fresh\s+nosuch\s+-\s+-\s+-\s+-\s+none$`,
			`^fresh\s+t\s+3-0\s+-\s+\d+\s+-\s+fresh_\S+$`, `^fresh\s+t\s+3-1\s+-\s+\d+\s+-\s+fresh_\S+$`}},
		{[]string{"--topic=zz"}, []string{`^fresh\s+zz\s+-\s+-\s+-\s+-\s+none$`}},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"--zookeeper=" + zk, "--group=fresh"}, tc.args...)
		if err := run(context.Background(), args, &out, &errOut); err != nil {
			t.Fatalf("%q: %v\n%s", tc.args, err, errOut.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != len(tc.rows)+3 {
			t.Fatalf("%q: output\n%s\nwant a header, %d rows and the broker info", tc.args, out.String(), len(tc.rows))
		}
		for i, re := range tc.rows {
			if !regexp.MustCompile(re).MatchString(lines[i+1]) {
				t.Errorf("%q: row %q, want %s", tc.args, lines[i+1], re)
			}
		}
		if len(tc.rows) == 4 && !strings.Contains(errOut.String(), "nosuch: no partitions") {
			t.Errorf("%q: stderr %q does not say nosuch has no partitions", tc.args, errOut.String())
		}
	}
}
