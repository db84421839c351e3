package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

// testServer is a Server on 127.0.0.1:0 over a log manager in a temp dir.
type testServer struct {
	addr string
	dir  string
	logs *log.Manager
	srv  *Server
	stop func() error // cancels Serve, waits for it, closes the logs
}

// startServer starts a server; mod may adjust both configurations.
func startServer(t testing.TB, mod func(*Config, *log.Config)) *testServer {
	t.Helper()
	lc := log.DefaultConfig()
	lc.Dir = t.TempDir()
	lc.FlushInterval = 1 // produced messages are visible at once
	sc := Config{
		MaxRequestSize:  100 << 20,
		UseSendfile:     true,
		ShutdownTimeout: 5 * time.Second,
		Logger:          slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if mod != nil {
		mod(&sc, &lc)
	}
	logs, err := log.Open(lc)
	if err != nil {
		t.Fatal(err)
	}
	sc.Logs = logs
	srv, err := New(sc)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	ts := &testServer{addr: ln.Addr().String(), dir: lc.Dir, logs: logs, srv: srv}
	stopped := false
	var stopErr error
	ts.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			stopErr = errors.Join(<-done, logs.Close())
		}
		return stopErr
	}
	t.Cleanup(func() {
		if err := ts.stop(); err != nil {
			t.Error(err)
		}
	})
	return ts
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// client speaks the protocol over a real TCP connection.
type client struct {
	t    testing.TB
	c    net.Conn
	logs *log.Manager // if set, sync also flushes, making appends visible
}

// dial connects a client whose sync makes everything produced visible.
func (ts *testServer) dial(t testing.TB) *client {
	t.Helper()
	c := dial(t, ts.addr)
	c.logs = ts.logs
	return c
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// A bound on every test read, so a broken server fails the test
	// instead of hanging it.
	if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return &client{t: t, c: c}
}

func (c *client) write(p []byte) {
	c.t.Helper()
	if _, err := c.c.Write(p); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *client) send(r *wire.Request) { c.t.Helper(); c.write(wire.AppendRequest(nil, r)) }

// response reads one response frame: its error code and body.
func (c *client) response() (wire.ErrorCode, []byte) {
	c.t.Helper()
	var hdr [wire.ResponseHeaderLen]byte
	if _, err := io.ReadFull(c.c, hdr[:]); err != nil {
		c.t.Fatalf("reading response header: %v", err)
	}
	size := int32(binary.BigEndian.Uint32(hdr[:]))
	if size < 2 {
		c.t.Fatalf("response size %d", size)
	}
	body := make([]byte, size-2)
	if _, err := io.ReadFull(c.c, body); err != nil {
		c.t.Fatalf("reading response body of %d bytes: %v", len(body), err)
	}
	return wire.ErrorCode(int16(binary.BigEndian.Uint16(hdr[4:]))), body
}

// expectClosed checks that the server closes the connection without
// sending anything more.
func (c *client) expectClosed() {
	c.t.Helper()
	var b [1]byte
	n, err := c.c.Read(b[:])
	if n != 0 || !(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		c.t.Fatalf("connection not closed by the server: read %d bytes, err %v", n, err)
	}
}

func produceReq(topic string, partition wire.Partition, set []byte) *wire.Request {
	return &wire.Request{Type: wire.RequestProduce, Produce: []wire.ProduceRequest{{Topic: topic, Partition: partition, Messages: set}}}
}

func fetchReq(topic string, partition wire.Partition, offset wire.Offset, maxSize int32) *wire.Request {
	return &wire.Request{Type: wire.RequestFetch, Fetch: []wire.FetchRequest{{Topic: topic, Partition: partition, Offset: offset, MaxSize: maxSize}}}
}

func offsetsReq(topic string, partition wire.Partition, time int64, max int32) *wire.Request {
	return &wire.Request{Type: wire.RequestOffsets, Offsets: &wire.OffsetsRequest{Topic: topic, Partition: partition, Time: time, MaxOffsets: max}}
}

// fetch sends a FETCH and returns the response.
func (c *client) fetch(topic string, partition wire.Partition, offset wire.Offset, maxSize int32) (wire.ErrorCode, []byte) {
	c.t.Helper()
	c.send(fetchReq(topic, partition, offset, maxSize))
	return c.response()
}

// expectLog fails the test unless partition p of topic holds exactly want:
// a FETCH from offset 0 of up to 1 MiB returns no error and want's bytes.
func (c *client) expectLog(topic string, p wire.Partition, want []byte) {
	c.t.Helper()
	if code, body := c.fetch(topic, p, 0, 1<<20); code != wire.CodeNone || !bytes.Equal(body, want) {
		c.t.Fatalf("%s-%d: code %v, %d bytes, want %d", topic, p, code, len(body), len(want))
	}
}

// expectMerged fails the test unless the server appended at least one
// request together with another: a pipelining test that never merged did
// not exercise merging.
func (ts *testServer) expectMerged(t testing.TB) {
	t.Helper()
	if ts.srv.merged.Load() == 0 {
		t.Fatal("no request was appended together with another: the test did not exercise merging")
	}
}

// offsets sends an OFFSETS request and decodes the answer.
func (c *client) offsets(topic string, partition wire.Partition, time int64, max int32) (wire.ErrorCode, []wire.Offset) {
	c.t.Helper()
	c.send(offsetsReq(topic, partition, time, max))
	code, body := c.response()
	offs, err := wire.DecodeOffsetsResponse(body)
	if err != nil {
		c.t.Fatalf("offsets response % x: %v", body, err)
	}
	return code, offs
}

// produce sends a PRODUCE and waits until the server has handled it (the
// answer to a following request on the same connection comes after it).
func (c *client) produce(topic string, partition wire.Partition, set []byte) {
	c.t.Helper()
	c.send(produceReq(topic, partition, set))
	c.sync()
}

// sync waits until every request sent so far has been handled and, for a
// client of testServer.dial, until what they appended is flushed and so
// visible to fetches (the log flushes on its own goroutine).
func (c *client) sync() {
	c.t.Helper()
	c.offsets("sync", 0, wire.LatestTime, 1)
	if c.logs != nil {
		if err := c.logs.FlushAll(); err != nil {
			c.t.Fatal(err)
		}
	}
}

// payloads returns n distinct payloads of about size bytes.
func payloads(n, size int, tag string) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		p := []byte(strings.Repeat(tag, size/len(tag)+1)[:size])
		binary.BigEndian.PutUint32(p, uint32(i))
		out[i] = p
	}
	return out
}
