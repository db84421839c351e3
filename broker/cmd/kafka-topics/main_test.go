package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"
	"github.com/spf13/pflag"
)

func runTool(args ...string) (string, string, error) {
	return command.Capture(context.Background(), args...)
}

func TestHelpAndUsage(t *testing.T) {
	_, help, err := runTool("--help")
	if err != pflag.ErrHelp {
		t.Fatalf("--help: %v", err)
	}
	for _, opt := range []string{"--zookeeper", "--create", "--describe", "--list", "--partitions", "--replication-factor", "--under-replicated-partitions"} {
		if !strings.Contains(help, opt) {
			t.Errorf("--help does not describe %s", opt)
		}
	}
	if _, _, err := runTool("--list"); err == nil || !strings.Contains(err.Error(), "--zookeeper") {
		t.Fatalf("no --zookeeper: %v", err)
	}
	if _, _, err := runTool("--zookeeper=x:1", "--list", "--describe"); err == nil {
		t.Fatal("two actions accepted")
	}
}

func TestCreateListDescribe(t *testing.T) {
	connect := zktest.Start(t)
	zk := zkbroker.Dial(t, zkcoord.Config{Connect: connect})
	for id := range 3 {
		info := zkcoord.NewBrokerInfo(wire.BrokerID(id), "127.0.0.1", 9000+id, time.Now())
		if err := zk.CreateEphemeral(zkcoord.BrokerPath(wire.BrokerID(id)), []byte(info.String())); err != nil {
			t.Fatal(err)
		}
	}
	zkFlag := "--zookeeper=" + connect
	if out, _, err := runTool(zkFlag, "--create", "--topic=t", "--partitions=2", "--replication-factor=3"); err != nil || !strings.Contains(out, "Created") {
		t.Fatalf("create: %q %v", out, err)
	}
	if _, _, err := runTool(zkFlag, "--create", "--topic=t"); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("second create: %v", err)
	}
	if _, _, err := runTool(zkFlag, "--create", "--topic=u", "--replication-factor=4"); err == nil {
		t.Fatal("replication factor above the broker count accepted")
	}
	// A name of 255 characters was created before (its partitions'
	// directories, "<topic>-0", do not fit a file name, so no broker could
	// store it); Kafka's rule allows 249.
	long := strings.Repeat("x", 255)
	if _, _, err := runTool(zkFlag, "--create", "--topic="+long); err == nil || !strings.Contains(err.Error(), "more than 249") {
		t.Fatalf("255-character topic: %v", err)
	}
	if err := zkcoord.ReplicationOn(zk).CreateTopic(long, zkcoord.Assignment{0: {0}}); err == nil {
		t.Fatal("zkcoord created a 255-character topic")
	}
	if out, _, err := runTool(zkFlag, "--create", "--topic=v", "--replica-assignment=2:1,1:0"); err != nil {
		t.Fatalf("create with an assignment: %q %v", out, err)
	}
	if out, _, err := runTool(zkFlag, "--list"); err != nil || out != "t\nv\n" {
		t.Fatalf("list = %q, %v", out, err)
	}
	a, ok, err := zkcoord.ReplicationOn(zk).TopicAssignment("v")
	if err != nil || !ok || len(a) != 2 || a[0][0] != 2 || a[1][1] != 0 {
		t.Fatalf("v's assignment = %v %v %v", a, ok, err)
	}
	// The controller's part, written by hand: partition 0 fully in sync,
	// partition 1 with one replica out of the ISR.
	st := zkcoord.PartitionState{ControllerEpoch: 1, Leader: 0, LeaderEpoch: 4, ISR: []wire.BrokerID{0, 1, 2}}
	if _, err := zkcoord.ReplicationOn(zk).WritePartitionState("t", 0, st, -1); err != nil {
		t.Fatal(err)
	}
	st.Leader, st.ISR = 1, []wire.BrokerID{1, 2}
	if _, err := zkcoord.ReplicationOn(zk).WritePartitionState("t", 1, st, -1); err != nil {
		t.Fatal(err)
	}
	out, _, err := runTool(zkFlag, "--describe", "--topic=t")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Topic:t", "PartitionCount:2", "ReplicationFactor:3", "Partition: 0", "Leader: 0",
		"Replicas: 0,1,2", "Isr: 0,1,2", "LeaderEpoch: 4", "Partition: 1", "Isr: 1,2"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	plain, _, err := runTool(zkFlag, "--describe")
	if err != nil {
		t.Fatal(err)
	}
	out, _, err = runTool(zkFlag, "--describe", "--under-replicated-partitions")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	// t-1 (ISR 1,2 of 0,1,2) and both partitions of v (no state yet),
	// each topic under its header line.
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "Topic:t PartitionCount:2") || !strings.HasPrefix(lines[1], "Topic: t Partition: 1 ") ||
		!strings.HasPrefix(lines[2], "Topic:v PartitionCount:2") || !strings.HasPrefix(lines[3], "Topic: v Partition: 0 Leader: none") {
		t.Fatalf("under-replicated partitions:\n%s", out)
	}
	// Laid out as the plain --describe (issue 26, item 8: there were no
	// header lines, and the columns were not those of the plain output):
	// headers at the margin, partition lines indented with a tab and their
	// columns aligned across topics.
	for name, text := range map[string]string{"plain": plain, "filtered": out} {
		starts := map[string]int{}
		for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
			if strings.HasPrefix(l, "Topic:") {
				continue
			}
			if !strings.HasPrefix(l, "\tTopic: ") {
				t.Errorf("%s: line %q is neither a header nor a tab-indented partition line:\n%s", name, l, text)
				continue
			}
			for _, col := range []string{"Partition:", "Leader:", "Replicas:", "Isr:", "LeaderEpoch:"} {
				i := strings.Index(l, col)
				if at, ok := starts[col]; ok && at != i {
					t.Errorf("%s: column %s at %d and %d:\n%s", name, col, at, i, text)
				}
				starts[col] = i
			}
		}
	}
}
