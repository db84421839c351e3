package producer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

func asyncConfig(brokerList string) Config {
	c := testConfig(brokerList)
	c.Type = Async
	return c
}

func TestAsyncSendsWhenBatchSizeWait(t *testing.T) {
	peer := newPeer(t)
	cfg := asyncConfig(peer.brokerList(0))
	cfg.BatchSize = 3
	cfg.QueueTime = time.Hour
	p := newProducer(t, cfg)
	for _, m := range []string{"a", "b", "c", "d", "e"} {
		if err := p.Send(t.Context(), "t", values(m)...); err != nil {
			t.Fatal(err)
		}
	}
	r := peer.waitRequests(1)[0].req
	if r.Type != wire.RequestMultiProduce || len(r.Produce) != 1 {
		t.Fatalf("got %v with %d parts, want one MULTIPRODUCE part", r.Type, len(r.Produce))
	}
	if got := peer.messages("t"); strings.Join(got, ",") != "a,b,c" {
		t.Errorf("first batch = %q, want a,b,c", got)
	}
	// d and e wait for queue.time (an hour) or Close.
	if n := len(peer.requests()); n != 1 {
		t.Fatalf("got %d requests before Close, want 1", n)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	peer.waitRequests(2)
	if got := peer.messages("t"); strings.Join(got, ",") != "a,b,c,d,e" {
		t.Errorf("messages = %q, want a..e", got)
	}
}

func TestAsyncSendsAfterQueueTime(t *testing.T) {
	peer := newPeer(t)
	cfg := asyncConfig(peer.brokerList(0))
	cfg.BatchSize = 1000
	cfg.QueueTime = 20 * time.Millisecond
	p := newProducer(t, cfg)
	start := time.Now()
	if err := p.Send(t.Context(), "t", values("lonely")...); err != nil {
		t.Fatal(err)
	}
	peer.waitRequests(1)
	if since := time.Since(start); since < cfg.QueueTime {
		t.Errorf("sent after %v, before queue.time %v", since, cfg.QueueTime)
	}
	if got := peer.messages("t"); strings.Join(got, ",") != "lonely" {
		t.Errorf("messages = %q", got)
	}
}

func TestAsyncGroupsByTopicAndPartition(t *testing.T) {
	peer := newPeer(t)
	cfg := asyncConfig("")
	cfg.Cluster = &fixedCluster{parts: []wire.BrokerPartition{{Broker: 0, Partition: 0}, {Broker: 0, Partition: 1}}, addrs: map[wire.BrokerID]string{0: peer.addr()}}
	cfg.BatchSize = 6
	cfg.QueueTime = time.Hour
	cfg.CompressionCodec = wire.CodecSnappy
	cfg.CompressedTopics = []string{"z"}
	p := newProducer(t, cfg)
	// "a"=97 -> partition 1, "b"=98 -> partition 0.
	send := func(topic, key, v string) {
		if err := p.Send(t.Context(), topic, Message{Key: []byte(key), Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	send("x", "a", "x1")
	send("z", "a", "z1")
	send("x", "b", "x2")
	send("x", "a", "x3")
	send("z", "a", "z2")
	send("x", "b", "x4")
	r := peer.waitRequests(1)[0].req
	got := map[string]string{}
	for _, pr := range r.Produce {
		got[fmt.Sprintf("%s-%d", pr.Topic, pr.Partition)] = strings.Join(payloads(t, pr.Messages), ",")
		it := wire.NewIterator(pr.Messages, 0)
		it.Next()
		if compressed := it.Message().Codec() == wire.CodecSnappy; compressed != (pr.Topic == "z") {
			t.Errorf("topic %s compressed = %v", pr.Topic, compressed)
		}
	}
	want := map[string]string{"x-1": "x1,x3", "z-1": "z1,z2", "x-0": "x2,x4"}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(r.Produce) != 3 {
		t.Errorf("parts = %v, want %v", got, want)
	}
}

// gatedCluster blocks the async sender when it looks up its broker's
// address for a batch, until the test releases it: a broker that cannot be
// reached, without timing.
type gatedCluster struct {
	fixedCluster
	calls   chan struct{} // receives one value per lookup
	release chan struct{}
}

func (c *gatedCluster) BrokerAddr(id wire.BrokerID) (string, bool) {
	c.calls <- struct{}{}
	<-c.release
	return c.fixedCluster.BrokerAddr(id)
}

func TestAsyncQueueFull(t *testing.T) {
	peer := newPeer(t)
	cl := &gatedCluster{
		fixedCluster: fixedCluster{parts: []wire.BrokerPartition{{Broker: 0, Partition: wire.RandomPartition}}, addrs: map[wire.BrokerID]string{0: peer.addr()}},
		calls:        make(chan struct{}, 100), release: make(chan struct{}, 1),
	}
	cfg := asyncConfig("")
	cfg.Cluster = cl
	cfg.BatchSize = 1
	cfg.QueueSize = 4
	p := newProducer(t, cfg)
	// Send's own lookup (creating the sender), then the sender's, which
	// blocks with the first message in hand.
	cl.release <- struct{}{}
	if err := p.Send(t.Context(), "t", values("m0")...); err != nil {
		t.Fatal(err)
	}
	<-cl.calls
	<-cl.calls
	for i := 1; i <= cfg.QueueSize; i++ {
		if err := p.Send(t.Context(), "t", values(fmt.Sprint("m", i))...); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	err := p.Send(t.Context(), "t", values("x", "y")...)
	if !errors.Is(err, ErrQueueFull) || !strings.Contains(err.Error(), "0 of the 2 messages") {
		t.Fatalf("err = %v, want ErrQueueFull with 0 of 2 queued", err)
	}
	// A blocking enqueue gives up when its context ends.
	p.cfg.EnqueueTimeout = -1
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := p.Send(ctx, "t", values("x")...); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("blocked send: err = %v, want DeadlineExceeded", err)
	}
	// A waiting enqueue gives up after queue.enqueueTimeout.ms.
	p.cfg.EnqueueTimeout = 10 * time.Millisecond
	if err := p.Send(t.Context(), "t", values("x")...); !errors.Is(err, ErrQueueFull) {
		t.Errorf("waiting send: err = %v, want ErrQueueFull", err)
	}
	close(cl.release)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := peer.waitMessages("t", 5); strings.Join(got, ",") != "m0,m1,m2,m3,m4" {
		t.Errorf("peer got %q, want m0..m4", got)
	}
}

func TestAsyncBlockingEnqueueWaitsForRoom(t *testing.T) {
	peer := newPeer(t)
	cfg := asyncConfig(peer.brokerList(0))
	cfg.BatchSize = 2
	cfg.QueueSize = 2
	cfg.QueueTime = time.Millisecond
	cfg.EnqueueTimeout = -1
	p := newProducer(t, cfg)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 100 {
				if err := p.Send(t.Context(), "t", values(fmt.Sprintf("%d-%d", g, i))...); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := len(peer.waitMessages("t", 400)); got != 400 {
		t.Errorf("got %d messages, want 400", got)
	}
}

func TestAsyncErrorsReachHandlerAndClose(t *testing.T) {
	peer := newPeer(t)
	addr := peer.brokerList(5)
	peer.stop()
	cfg := asyncConfig(addr)
	cfg.ConnectTimeout = 20 * time.Millisecond
	cfg.BatchSize = 2
	var mu sync.Mutex
	var handled []error
	cfg.ErrorHandler = func(err error) {
		mu.Lock()
		handled = append(handled, err)
		mu.Unlock()
	}
	p := newProducer(t, cfg)
	if err := p.Send(t.Context(), "t", values("a", "b", "c")...); err != nil {
		t.Fatal(err)
	}
	err := p.Close()
	var ae *AsyncError
	if !errors.As(err, &ae) || ae.Broker != 5 || ae.Messages != 2 {
		t.Fatalf("Close = %v, want the first AsyncError (broker 5, 2 messages)", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(handled) != 2 {
		t.Errorf("handler got %d errors, want 2 (one per batch): %v", len(handled), handled)
	}
}
