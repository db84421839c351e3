package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

func TestExecuteAndVerify(t *testing.T) {
	if out, err := runTool("--help"); err != pflag.ErrHelp || !strings.Contains(out, "--reassignment-json-file") {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	connect := zktest.Start(t)
	zk := zkbroker.Dial(t, zkcoord.Config{Connect: connect})
	if err := zk.CreateTopic("t", zkcoord.Assignment{0: {0, 1}}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(file, zkcoord.MarshalReassignments([]zkcoord.Reassignment{{Topic: "t", Partition: 0, Replicas: []wire.BrokerID{1, 2}}}), 0o644); err != nil {
		t.Fatal(err)
	}
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
	if _, err := runTool(append(args, "--execute")...); err == nil || !strings.Contains(err.Error(), "in progress") {
		t.Fatalf("second execute: %v", err)
	}
	out, err := runTool(append(args, "--verify")...)
	if !errors.As(err, &exit) || exit.Code != 1 || !strings.Contains(out, "in progress") {
		t.Fatalf("verify while pending: %q %v", out, err)
	}
	// What the controller does at the end.
	if err := zk.SetTopicAssignment("t", zkcoord.Assignment{0: {1, 2}}); err != nil {
		t.Fatal(err)
	}
	if err := zk.Delete(zkcoord.ReassignPartitionsPath); err != nil {
		t.Fatal(err)
	}
	if out, err := runTool(append(args, "--verify")...); err != nil || !strings.Contains(out, "completed successfully") {
		t.Fatalf("verify when done: %q %v", out, err)
	}
}
