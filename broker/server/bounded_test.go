package server

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

// closedByServer reports whether the server has closed nc: a read returns
// EOF or a reset, not a timeout.
func closedByServer(nc net.Conn) bool {
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	n, err := nc.Read(b[:])
	return n == 0 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET))
}

// TestIdleConnectionsClosed: 2,000 connections that send a size prefix
// (or half of one, or nothing) and nothing more are closed once
// connections.max.idle.ms (2 s here) has passed, while a client that
// keeps sending requests is served throughout. Before, nothing closed
// them: they stayed open for as long as their clients wanted. (With 300 ms
// a CI run under load once closed the honest client too: a gap between
// two of its requests outlasted the idle time.)
func TestIdleConnectionsClosed(t *testing.T) {
	const idle = 2 * time.Second
	ts := startServer(t, func(c *Config, _ *log.Config) { c.MaxIdle = idle })
	const n = 2000
	conns := make([]net.Conn, n)
	for i := range conns {
		c := dial(t, ts.addr)
		switch i % 3 {
		case 0:
			c.write(binary.BigEndian.AppendUint32(nil, 100<<20)) // a size prefix, then silence
		case 1:
			c.write([]byte{0, 0}) // half of one
		}
		conns[i] = c.c
	}
	honest := ts.dial(t)
	honest.produce("t", 0, wire.NewMessageSet([]byte("m")))
	start := time.Now()
	polls := 0
	wait.Within(t, 60*time.Second, "the idle connections to be closed", func() bool {
		polls++
		if code, offs := honest.offsets("t", 0, wire.LatestTime, 1); code != wire.CodeNone || len(offs) != 1 || offs[0] == 0 {
			t.Fatalf("honest client: %v %v", code, offs)
		}
		return ts.srv.connCount() == 1
	})
	t.Logf("%d idle connections closed %v after the last was opened; the honest client was answered %d times meanwhile", n, time.Since(start), polls)
	for i, c := range conns {
		if !closedByServer(c) {
			t.Fatalf("connection %d still open", i)
		}
	}
	if code, _ := honest.offsets("t", 0, wire.LatestTime, 1); code != wire.CodeNone {
		t.Fatalf("honest client after the idle ones: %v", code)
	}
}

// TestPartialFrameDeadline: a request whose bytes trickle in (one every
// 50 ms, each well within the idle timeout) must still be complete within
// connections.max.idle.ms of its size prefix. Before, a partial request
// held its connection, and its buffer, for as long as the client liked.
func TestPartialFrameDeadline(t *testing.T) {
	const idle = 300 * time.Millisecond
	ts := startServer(t, func(c *Config, _ *log.Config) { c.MaxIdle = idle })
	c := ts.dial(t)
	c.write(binary.BigEndian.AppendUint32(nil, 1000))
	start := time.Now()
	var closed bool
	for range 100 { // 5 s of trickling at most
		if _, err := c.c.Write([]byte{0}); err != nil {
			closed = true
			break
		}
		if !wait.Until(50*time.Millisecond, func() bool { return ts.srv.connCount() == 0 }) {
			continue
		}
		closed = true
		break
	}
	if !closed || !closedByServer(c.c) {
		t.Fatalf("a trickling request kept its connection for %v", time.Since(start))
	}
	if d := time.Since(start); d < idle {
		t.Fatalf("closed after %v, before connections.max.idle.ms %v", d, idle)
	}
}

// TestQueuedRequestBytesBounded: twenty clients announce 10 MiB frames and
// send 2 MiB of each (the attack, a tenth of its size: there,
// twenty 100 MiB frames sent one fifth of the way held 664 MB for 12
// minutes). The broker's accounted request memory never passes
// queued.max.request.bytes (16 MiB), small requests are still served,
// every byte is given back once the partial frames time out, and a larger
// request is served again. Before, nothing bounded or counted it (at this
// scale about 20 x 2-4 MiB).
func TestQueuedRequestBytesBounded(t *testing.T) {
	const (
		limit = 16 << 20
		idle  = 2 * time.Second
	)
	ts := startServer(t, func(c *Config, _ *log.Config) {
		c.MaxRequestSize, c.MaxQueuedRequestBytes, c.MaxIdle = 10<<20, limit, idle
	})
	// One client alone: its buffer grows with what arrives, not with the
	// 10 MiB it announced.
	one := dial(t, ts.addr)
	one.write(binary.BigEndian.AppendUint32(nil, 10<<20))
	one.write(make([]byte, 1<<20))
	wait.For(t, "1 MiB to be read", func() bool { return ts.srv.QueuedRequestBytes() >= 1<<20 })
	if got := ts.srv.QueuedRequestBytes(); got > 2<<20+frameGrowStep {
		t.Fatalf("1 MiB of a 10 MiB frame holds %d bytes", got)
	}
	one.c.Close()
	wait.For(t, "the bytes to be given back", func() bool { return ts.srv.QueuedRequestBytes() == 0 })

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if n := ts.srv.QueuedRequestBytes(); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var writers sync.WaitGroup
	for range 20 {
		c := dial(t, ts.addr)
		c.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
		writers.Add(1)
		go func() {
			defer writers.Done()
			// Blocks once the broker stops reading; fails when it closes.
			c.c.Write(append(binary.BigEndian.AppendUint32(nil, 10<<20), make([]byte, 2<<20)...))
		}()
	}
	wait.For(t, "the partial frames to fill the budget", func() bool { return ts.srv.QueuedRequestBytes() > limit-4<<20 })
	// A small request needs no budget: served at once.
	small := ts.dial(t)
	small.sync()
	// The partial frames reach their deadline, and every byte comes back.
	writers.Wait()
	wait.For(t, "every byte to be given back", func() bool { return ts.srv.connCount() <= 1 && ts.srv.QueuedRequestBytes() == 0 })
	close(stop)
	<-sampled
	// Then a larger request is served again (while the budget was full it
	// would have waited for bytes).
	set := wire.NewMessageSet(make([]byte, 500<<10))
	large := ts.dial(t)
	large.produce("t", 0, set)
	large.expectLog("t", 0, set)
	if got := ts.srv.QueuedRequestBytes(); got != 0 {
		t.Fatalf("%d bytes held after the requests were handled", got)
	}
	t.Logf("peak accounted request memory %d KiB of %d KiB allowed", peak.Load()>>10, limit>>10)
	if p := peak.Load(); p > limit {
		t.Fatalf("accounted request memory reached %d bytes, above queued.max.request.bytes %d", p, limit)
	}
}

func TestQueuedRequestBytesValidate(t *testing.T) {
	c := DefaultConfig()
	c.MaxQueuedRequestBytes = int64(c.MaxRequestSize) - 1
	if err := c.Validate(); err == nil {
		t.Fatal("queued.max.request.bytes below max.socket.request.bytes accepted")
	}
	for _, ok := range []int64{-1, 0, int64(c.MaxRequestSize)} {
		c.MaxQueuedRequestBytes = ok
		if err := c.Validate(); err != nil {
			t.Fatalf("queued.max.request.bytes %d: %v", ok, err)
		}
	}
}
