package server

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Shutdown stops accepting, closes idle connections at once, lets a
// request in flight finish, and then returns; the log then closes with its
// clean-shutdown marker and holds the request's messages.
func TestShutdownFinishesInFlightRequest(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	ts := startServer(t, func(c *Config, _ *log.Config) {
		// A PRODUCE to partition -1 waits here: a request in flight.
		c.ChoosePartition = func(int) int {
			entered <- struct{}{}
			<-release
			return 0
		}
	})
	idle := ts.dial(t)
	idle.sync()
	c := ts.dial(t)
	set := wire.NewMessageSet([]byte("in flight"))
	c.send(produceReq("t", -1, set))
	<-entered

	stopped := make(chan error, 1)
	go func() { stopped <- ts.stop() }()
	wait.Within(t, 10*time.Second, "shutdown to begin", ts.srv.isClosing)
	idle.expectClosed()
	if nc, err := net.Dial("tcp", ts.addr); err == nil {
		nc.Close()
		t.Fatal("the listener still accepts")
	}
	select {
	case err := <-stopped:
		t.Fatalf("shutdown ended with a request in flight: %v", err)
	default:
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	c.expectClosed()

	if _, err := os.Stat(filepath.Join(ts.dir, "t-0", log.CleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker: %v", err)
	}
	lc := log.DefaultConfig()
	lc.Dir = ts.dir
	logs, err := log.Open(lc)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	l, err := logs.Get("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.Read(0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	got, err := r.AppendTo(nil)
	if err != nil || !bytes.Equal(got, set) {
		t.Fatalf("after shutdown the log holds % x (%v)", got, err)
	}
}

// A client that never reads its responses cannot hold the shutdown longer
// than ShutdownTimeout.
func TestShutdownTimeoutClosesStuckWriters(t *testing.T) {
	const timeout = 200 * time.Millisecond
	ts := startServer(t, func(c *Config, _ *log.Config) {
		c.ShutdownTimeout = timeout
		c.SendBuffer = 64 << 10
	})
	set := wire.NewMessageSet(payloads(1000, 1000, "s")...)
	ts.dial(t).produce("t", 0, set)
	hog := ts.dial(t)
	var reqs []byte
	for range 100 { // 100 MB of responses, never read
		reqs = wire.AppendRequest(reqs, fetchReq("t", 0, 0, 1<<20))
	}
	hog.write(reqs)
	// The first response has begun: the broker is busy with this client.
	if _, err := io.ReadFull(hog.c, make([]byte, wire.ResponseHeaderLen)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < timeout || took > 10*time.Second {
		t.Fatalf("shutdown took %v with ShutdownTimeout %v", took, timeout)
	}
}
