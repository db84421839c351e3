package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/replicatest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/broker/cli"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"
	"github.com/spf13/pflag"
)

func runTool(args ...string) (string, error) {
	out, errOut, err := command.Capture(context.Background(), args...)
	return out + errOut, err
}

// register makes brokers ids live in /brokers/ids for as long as zk's
// session lasts (no broker process behind them).
func register(t *testing.T, zk *zkcoord.Conn, ids ...wire.BrokerID) {
	t.Helper()
	for _, id := range ids {
		info := zkcoord.NewBrokerInfo(id, "127.0.0.1", 1, time.Now())
		if err := zk.CreateEphemeral(zkcoord.BrokerPath(id), []byte(info.String())); err != nil {
			t.Fatal(err)
		}
	}
}

func writePlan(t *testing.T, plan string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(file, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestExecuteAndVerify(t *testing.T) {
	if out, err := runTool("--help"); err != pflag.ErrHelp || !strings.Contains(out, "--reassignment-json-file") || !strings.Contains(out, "--cancel") {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	connect := zktest.Start(t)
	zk := zkbroker.Dial(t, zkcoord.Config{Connect: connect})
	register(t, zk, 0, 1, 2)
	if err := zkcoord.ReplicationOn(zk).CreateTopic("t", zkcoord.Assignment{0: {0, 1}}); err != nil {
		t.Fatal(err)
	}
	file := writePlan(t, string(zkcoord.MarshalReassignments([]zkcoord.Reassignment{{Topic: "t", Partition: 0, Replicas: []wire.BrokerID{1, 2}}})))
	args := []string{"--zookeeper=" + connect, "--reassignment-json-file=" + file}
	// Before any --execute: not done, and nothing failed (issue 26, item
	// 8: this said "failed").
	var exit *cli.ExitError
	if out, err := runTool(append(args, "--verify")...); !errors.As(err, &exit) || exit.Code != 1 ||
		!strings.Contains(out, "t-0 is not done: no reassignment in progress (replicas are [0 1], not [1 2]") || strings.Contains(out, "failed") {
		t.Fatalf("verify before execute: %q %v", out, err)
	}
	if out, err := runTool(append(args, "--execute")...); err != nil || !strings.Contains(out, "Started") {
		t.Fatalf("execute: %q %v", out, err)
	}
	// The original replicas go with the plan, for --cancel.
	data, err := zk.Get(zkcoord.ReassignPartitionsPath)
	if err != nil {
		t.Fatal(err)
	}
	if rs, err := zkcoord.ParseReassignments(data); err != nil || len(rs) != 1 || !slices.Equal(rs[0].Original, []wire.BrokerID{0, 1}) {
		t.Fatalf("admin node %s: %v", data, err)
	}
	if _, err := runTool(append(args, "--execute")...); err == nil || !strings.Contains(err.Error(), "in progress") {
		t.Fatalf("second execute: %v", err)
	}
	out, err := runTool(append(args, "--verify")...)
	if !errors.As(err, &exit) || exit.Code != 1 || !strings.Contains(out, "in progress") {
		t.Fatalf("verify while pending: %q %v", out, err)
	}
	// What the controller does at the end.
	if err := zkcoord.ReplicationOn(zk).SetTopicAssignment("t", zkcoord.Assignment{0: {1, 2}}); err != nil {
		t.Fatal(err)
	}
	if err := zk.Delete(zkcoord.ReassignPartitionsPath); err != nil {
		t.Fatal(err)
	}
	if out, err := runTool(append(args, "--verify")...); err != nil || !strings.Contains(out, "completed successfully") {
		t.Fatalf("verify when done: %q %v", out, err)
	}
}

// TestRefusesBadPlans: each plan of issue 22 is refused and nothing is
// written to /admin/reassign_partitions. Before, the tool accepted [7,8,9]
// (unknown brokers: the reassignment never finished and blocked every later
// one), [0,0,1] (the assignment silently lost a replica), an empty list and
// a partition listed twice (the second entry replaced the first), and read
// /dev/zero until the kernel killed it at 24 GB.
func TestRefusesBadPlans(t *testing.T) {
	connect := zktest.Start(t)
	zk := zkbroker.Dial(t, zkcoord.Config{Connect: connect})
	register(t, zk, 0, 1, 2)
	if err := zkcoord.ReplicationOn(zk).CreateTopic("t", zkcoord.Assignment{0: {0, 1, 2}, 1: {1, 2, 0}}); err != nil {
		t.Fatal(err)
	}
	entry := func(p int, replicas string) string {
		return `{"topic":"t","partition":` + string(rune('0'+p)) + `,"replicas":` + replicas + `}`
	}
	plan := func(entries ...string) string {
		return `{"version":1,"partitions":[` + strings.Join(entries, ",") + `]}`
	}
	for _, tc := range []struct{ name, plan, want string }{
		{"unknown brokers", plan(entry(0, "[7,8,9]")), "broker 7, 8, 9 is not a live broker"},
		{"duplicate replica", plan(entry(0, "[0,0,1]")), "broker 0 listed more than once"},
		{"empty replicas", plan(entry(0, "[]")), "no replicas"},
		{"partition twice", plan(entry(0, "[0,1,2]"), entry(1, "[2,1,0]"), entry(0, "[1,2]")), "listed twice"},
		{"no partition", plan(), "no partition to reassign"},
		{"unknown partition", plan(entry(5, "[0,1,2]")), "does not exist"},
		{"bad topic", plan(`{"topic":"../x","partition":0,"replicas":[0]}`), "invalid topic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runTool("--zookeeper="+connect, "--reassignment-json-file="+writePlan(t, tc.plan), "--execute")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("execute: %v, want an error with %q", err, tc.want)
			}
		})
	}
	start := time.Now()
	_, err := runTool("--zookeeper="+connect, "--reassignment-json-file=/dev/zero", "--execute")
	if err == nil || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
		t.Fatalf("/dev/zero: %v", err)
	}
	t.Logf("/dev/zero refused in %v", time.Since(start))
	if ok, err := zk.Exists(zkcoord.ReassignPartitionsPath); err != nil || ok {
		t.Fatalf("a refused plan reached ZooKeeper: %v %v", ok, err)
	}
}

// TestCancel: a reassignment to a broker that is registered but never
// catches up (no broker process behind its registration) never ends and,
// before --cancel existed, blocked every later reassignment. --cancel has
// the real controller restore the original replicas and end it.
func TestCancel(t *testing.T) {
	c := replicatest.StartCluster(t, 3, nil)
	c.CreateTopic("c", zkcoord.Assignment{0: {0, 1, 2}})
	c.WaitISR("c", 0, 3)
	args := []string{"--zookeeper=" + c.Connect}
	if out, err := runTool(append(args, "--cancel")...); err != nil || !strings.Contains(out, "No reassignment") {
		t.Fatalf("cancel with nothing pending: %q %v", out, err)
	}
	ghost := zkbroker.Dial(t, zkcoord.Config{Connect: c.Connect})
	register(t, ghost, 3)
	file := writePlan(t, string(zkcoord.MarshalReassignments([]zkcoord.Reassignment{{Topic: "c", Partition: 0, Replicas: []wire.BrokerID{3, 1, 2}}})))
	if out, err := runTool(append(args, "--reassignment-json-file="+file, "--execute")...); err != nil {
		t.Fatalf("execute: %q %v", out, err)
	}
	wait.Within(t, replicatest.Timeout, "the controller to add broker 3", func() bool {
		a, _, err := zkcoord.ReplicationOn(c.ZK).TopicAssignment("c")
		return err == nil && slices.Contains(a[0], 3)
	})
	out, err := runTool(append(args, "--reassignment-json-file="+file, "--cancel")...)
	if err != nil || !strings.Contains(out, "restores replicas [0 1 2]") {
		t.Fatalf("cancel: %q %v", out, err)
	}
	wait.Within(t, replicatest.Timeout, "the controller to restore [0 1 2] and end the reassignment", func() bool {
		a, _, err := zkcoord.ReplicationOn(c.ZK).TopicAssignment("c")
		pending, perr := c.ZK.Exists(zkcoord.ReassignPartitionsPath)
		return err == nil && perr == nil && !pending && slices.Equal(a[0], []wire.BrokerID{0, 1, 2})
	})
	st := c.WaitISR("c", 0, 3)
	if !slices.Contains([]wire.BrokerID{0, 1, 2}, st.Leader) {
		t.Fatalf("leader %d after the cancel", st.Leader)
	}
	// A later reassignment is no longer blocked.
	file2 := writePlan(t, string(zkcoord.MarshalReassignments([]zkcoord.Reassignment{{Topic: "c", Partition: 0, Replicas: []wire.BrokerID{2, 1, 0}}})))
	if out, err := runTool(append(args, "--reassignment-json-file="+file2, "--execute")...); err != nil {
		t.Fatalf("execute after the cancel: %q %v", out, err)
	}
}
