package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/cli"
	"github.com/spf13/pflag"
)

func TestHelpAndBadFlags(t *testing.T) {
	_, help, err := command.Capture(context.Background(), "--help")
	if !errors.Is(err, pflag.ErrHelp) || !strings.Contains(help, "--queue-time") {
		t.Fatalf("--help: %v\n%s", err, help)
	}
	var usage *cli.UsageError
	if _, _, err := command.Capture(context.Background(), "--topic=t"); !errors.As(err, &usage) {
		t.Fatalf("no cluster: %v", err)
	}
}

// TestQueueTimeFollowsBatchSizeAndRate: at 400 msg/s with batches of 40, a
// batch fills in 100 ms, so messages wait about 50 ms on average and never
// much more than 100 ms; every message is sent.
func TestQueueTimeFollowsBatchSizeAndRate(t *testing.T) {
	b := brokertest.Start(t, brokertest.Config())
	out, stderr, err := command.Capture(context.Background(), "--broker-list="+fmt.Sprintf("0:%s", b.Addr), "--topic=fe",
		"--rate=400", "--duration=1500ms", "--batch-size=40", "--queue-time=5s", "--audit-window=500ms", "--host=fe-1", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var s Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if s.Sent < 500 || s.Sent > 620 {
		t.Errorf("sent %d messages in 1.5 s at 400/s", s.Sent)
	}
	if s.QueueMeanms < 20 || s.QueueMeanms > 150 || s.QueueP50ms > 200 {
		t.Errorf("queue time mean %.1f ms, p50 %.1f ms: want about 50 ms", s.QueueMeanms, s.QueueP50ms)
	}
	if len(s.Windows) < 3 {
		t.Errorf("windows %+v", s.Windows)
	}
}
