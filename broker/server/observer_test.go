package server

import (
	"sync"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

// testObserver records what the server reports.
type testObserver struct {
	mu       sync.Mutex
	open     int
	requests map[wire.RequestType]int
	failed   int
	messages map[string]int
	bytesIn  map[string]int
	bytesOut map[string]int64
}

func newTestObserver() *testObserver {
	return &testObserver{requests: map[wire.RequestType]int{}, messages: map[string]int{}, bytesIn: map[string]int{}, bytesOut: map[string]int64{}}
}

func (o *testObserver) ConnOpened() { o.mu.Lock(); o.open++; o.mu.Unlock() }
func (o *testObserver) ConnClosed() { o.mu.Lock(); o.open--; o.mu.Unlock() }
func (o *testObserver) Request(t wire.RequestType, n int, took time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests[t] += n
	if err != nil {
		o.failed++
	}
}
func (o *testObserver) Produced(topic string, partition wire.Partition, messages, bytes int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.messages[topic] += messages
	o.bytesIn[topic] += bytes
}
func (o *testObserver) Fetched(topic string, partition wire.Partition, bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bytesOut[topic] += bytes
}

func (o *testObserver) snapshot() (open int, requests map[wire.RequestType]int, failed int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := make(map[wire.RequestType]int, len(o.requests))
	for k, v := range o.requests {
		r[k] = v
	}
	return o.open, r, o.failed
}

// TestObserver: the observer sees connections, requests (pipelined
// PRODUCE requests counted one by one), messages and bytes in and bytes
// out, and a refused request as failed.
func TestObserver(t *testing.T) {
	o := newTestObserver()
	ts := startServer(t, func(c *Config, _ *log.Config) { c.Observer = o })
	c := ts.dial(t)

	set := wire.NewMessageSet([]byte("one"), []byte("two"))
	var frames []byte
	const pipelined = 5
	for range pipelined {
		frames = wire.AppendRequest(frames, produceReq("t", 0, set))
	}
	c.write(frames)
	c.sync()
	if code, got := c.fetch("t", 0, 0, 1<<20); code != wire.CodeNone || len(got) != pipelined*len(set) {
		t.Fatalf("fetch = %v, %d bytes; want %d", code, len(got), pipelined*len(set))
	}

	// A request is counted once its response is sent: the client may read
	// the response first.
	wait.For(t, "the fetch counted", func() bool { _, reqs, _ := o.snapshot(); return reqs[wire.RequestFetch] == 1 })
	open, reqs, failed := o.snapshot()
	if open != 1 {
		t.Errorf("open connections = %d, want 1", open)
	}
	if reqs[wire.RequestProduce] != pipelined || reqs[wire.RequestFetch] != 1 || reqs[wire.RequestOffsets] != 1 || failed != 0 {
		t.Errorf("requests = %v, failed %d; want %d PRODUCE, 1 FETCH, 1 OFFSETS, none failed", reqs, failed, pipelined)
	}
	o.mu.Lock()
	msgs, in, out := o.messages["t"], o.bytesIn["t"], o.bytesOut["t"]
	o.mu.Unlock()
	if msgs != 2*pipelined || in != pipelined*len(set) || out != int64(pipelined*len(set)) {
		t.Errorf("messages %d, bytes in %d, bytes out %d; want %d, %d, %d", msgs, in, out, 2*pipelined, pipelined*len(set), pipelined*len(set))
	}

	c.send(offsetsReq("t", 0, wire.LatestTime, -1))
	c.expectClosed()
	wait.For(t, "the connection closed and counted as failed", func() bool { open, _, failed := o.snapshot(); return open == 0 && failed == 1 })
}
