package main

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"
)

// With zk.connect set, kafka-server registers itself as Kafka 0.7 does, and a
// second broker with the same id refuses to start.
func TestRegistersInZooKeeper(t *testing.T) {
	connect := zktest.Start(t)
	zc := zkbroker.Dial(t, zkcoord.Config{Connect: connect})

	args := []string{"--zk.connect=" + connect, "--zk.sessiontimeout.ms=2000", "--brokerid=7",
		"--hostname=127.0.0.1", "--port=0", "--log.dir=" + t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, io.Discard) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("first broker: %v", err)
		}
	}()

	var value string
	wait.Within(t, 30*time.Second, "/brokers/ids/7", func() bool {
		b, ok, err := zc.GetMaybe(zkcoord.BrokerPath(7))
		value = string(b)
		return err == nil && ok
	})
	if !regexp.MustCompile(`^.+-[0-9]+:127\.0\.0\.1:[0-9]+$`).MatchString(value) {
		t.Fatalf("/brokers/ids/7 = %q, want creatorId:127.0.0.1:port", value)
	}

	args[len(args)-1] = "--log.dir=" + t.TempDir()
	err := run(context.Background(), args, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second broker with id 7: %v, want a refusal", err)
	}
}
