package zkcoord

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/zkcoord/zktest"
)

// testTimeout bounds every wait of these tests.
const testTimeout = 30 * time.Second

// testSessionTimeout is short so that expiry tests run fast; zookeeper.sh
// allows sessions down to 1 s.
const testSessionTimeout = 2 * time.Second

func testLogger() *slog.Logger {
	if os.Getenv("ZKCOORD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func testConfig(connect string) Config {
	return Config{Connect: connect, SessionTimeout: testSessionTimeout, Logger: testLogger()}
}

// dial opens a Conn for the test and closes it at the end.
func dial(t *testing.T, cfg Config) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("Dial(%s): %v", cfg.Connect, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// nextEvent returns the next event of c or fails the test.
func nextEvent(t *testing.T, c *Conn) Event {
	t.Helper()
	select {
	case ev, ok := <-c.Events():
		if !ok {
			t.Fatal("Events closed")
		}
		return ev
	case <-time.After(testTimeout):
		t.Fatalf("no event within %v", testTimeout)
	}
	return Event{}
}

// expectNoEvent checks that nothing is delivered while probe runs a round
// trip to the server after the action that must not fire a watch.
func expectNoEvent(t *testing.T, c *Conn, probe *Conn) {
	t.Helper()
	// A write and read through another session, then a read through c,
	// orders any watch notification for c before the read's reply.
	if err := probe.SetPersistent("/probe", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get("/probe"); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	var queued []Event
	if c.deflt != nil {
		queued = append(queued, c.deflt.queue...)
	}
	c.mu.Unlock()
	if len(queued) > 0 {
		t.Fatalf("unexpected events %v", queued)
	}
	// The pump may hold one event between queue and channel.
	select {
	case ev := <-c.Events():
		t.Fatalf("unexpected event %v", ev)
	case <-time.After(100 * time.Millisecond):
	}
}

// expire makes the server expire the session of the Conn dialed through link:
// it cuts the link, waits until the node at watchPath (an ephemeral node of
// that session) disappears as seen from observer, and heals the link.
func expire(t *testing.T, link *zktest.Link, observer *Conn, watchPath string) {
	t.Helper()
	link.Cut()
	wait.Within(t, testTimeout, watchPath+" to vanish with the expired session", func() bool {
		ok, err := observer.Exists(watchPath)
		if err != nil {
			t.Fatal(err)
		}
		return !ok
	})
	link.Heal()
}
