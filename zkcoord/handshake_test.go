package zkcoord

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netdb11/kafka/zkcoord/zktest"
)

func TestCappedConnClampsOnlyFarDeadlines(t *testing.T) {
	c := cappedConn{limit: time.Second}
	if got := c.clamp(time.Time{}); !got.IsZero() {
		t.Errorf("a zero deadline (none) became %v", got)
	}
	near := time.Now().Add(500 * time.Millisecond)
	if got := c.clamp(near); !got.Equal(near) {
		t.Errorf("a deadline within the limit moved from %v to %v", near, got)
	}
	far := time.Now().Add(20 * time.Second)
	if got := c.clamp(far); got.After(time.Now().Add(time.Second)) {
		t.Errorf("a deadline 20 s ahead stayed at %v, past the 1 s limit", got)
	}
}

// TestReconnectGivesUpOnASilentServer breaks a session's connection and sends
// its reconnection to a server that accepts and never answers (a restarting
// ZooKeeper did that to a broker in the fault suite). The client must hang up
// within about the session timeout -- go-zookeeper alone waits 10 × two thirds
// of it, 13.3 s here -- and, once a real server answers, learn that its
// session expired.
func TestReconnectGivesUpOnASilentServer(t *testing.T) {
	connect := zktest.Start(t)
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var mute atomic.Bool
	var mu sync.Mutex
	var open []net.Conn
	cfg := testConfig(connect)
	cfg.Dial = func(network, address string, timeout time.Duration) (net.Conn, error) {
		if mute.Load() {
			address = silent.Addr().String()
		}
		c, err := net.DialTimeout(network, address, timeout)
		if err == nil {
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
		}
		return c, err
	}
	zc := dial(t, cfg)

	mute.Store(true)
	mu.Lock()
	for _, c := range open {
		c.Close()
	}
	mu.Unlock()
	var c net.Conn
	select {
	case c = <-accepted:
	case <-time.After(testTimeout):
		t.Fatal("the client did not reconnect")
	}
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(testTimeout))
	io.Copy(io.Discard, c) // the ConnectRequest, then EOF when the client hangs up
	c.Close()
	if took := time.Since(start); took > 3*cfg.SessionTimeout {
		t.Fatalf("the client waited %v for a silent server's handshake; want about the session timeout (%v)", took, cfg.SessionTimeout)
	}

	mute.Store(false)
	for {
		ev := nextEvent(t, zc)
		if ev.Type == EventSessionExpired {
			break
		}
	}
}
