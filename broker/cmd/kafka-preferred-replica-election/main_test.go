package main

import (
	"context"
	"strings"
	"testing"

	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"
	"github.com/spf13/pflag"
)

func runTool(args ...string) (string, string, error) {
	return command.Capture(context.Background(), args...)
}

func TestElectionNode(t *testing.T) {
	if _, help, err := runTool("--help"); err != pflag.ErrHelp || !strings.Contains(help, "--zookeeper") {
		t.Fatalf("--help: %v\n%s", err, help)
	}
	connect := zktest.Start(t)
	zk := zkbroker.Dial(t, zkcoord.Config{Connect: connect})
	if _, _, err := runTool("--zookeeper=" + connect); err == nil {
		t.Fatal("an election with no topics was started")
	}
	if err := zkcoord.ReplicationOn(zk).CreateTopic("t", zkcoord.Assignment{0: {1, 2}, 1: {2, 1}}); err != nil {
		t.Fatal(err)
	}
	if out, _, err := runTool("--zookeeper="+connect, "--topic=t"); err != nil || !strings.Contains(out, "2 partitions") {
		t.Fatalf("run: %q %v", out, err)
	}
	data, err := zk.Get(zkcoord.PreferredReplicaElectionPath)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := zkcoord.ParseElection(data)
	if err != nil || len(ps) != 2 || ps[1] != (wire.TopicPartition{Topic: "t", Partition: 1}) {
		t.Fatalf("node holds %s: %v %v", data, ps, err)
	}
	if _, _, err := runTool("--zookeeper="+connect, "--topic=t"); err == nil || !strings.Contains(err.Error(), "in progress") {
		t.Fatalf("second election: %v", err)
	}
	if _, _, err := runTool("--zookeeper="+connect, "--topic=nope"); err == nil {
		t.Fatal("unknown topic accepted")
	}
}
