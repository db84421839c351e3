package producer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/broker/wire"
)

func testConfig(brokerList string) Config {
	c := DefaultConfig()
	c.BrokerList = brokerList
	c.ConnectTimeout = 2 * time.Second
	return c
}

func newProducer(t *testing.T, cfg Config) *Producer {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func values(msgs ...string) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = Message{Value: []byte(m)}
	}
	return out
}

func TestSyncSendIsOneProduceRequest(t *testing.T) {
	peer := newPeer(t)
	p := newProducer(t, testConfig(peer.brokerList(0)))
	if err := p.Send(t.Context(), "clicks", values("a", "bb", "")...); err != nil {
		t.Fatal(err)
	}
	if err := p.Send(t.Context(), "clicks", values("ccc")...); err != nil {
		t.Fatal(err)
	}
	reqs := peer.waitRequests(2)
	if len(reqs) != 2 {
		t.Fatalf("got %d requests, want 2", len(reqs))
	}
	r := reqs[0].req
	if r.Type != wire.RequestProduce || len(r.Produce) != 1 {
		t.Fatalf("request = %v with %d parts, want one PRODUCE", r.Type, len(r.Produce))
	}
	pr := r.Produce[0]
	if pr.Topic != "clicks" || pr.Partition != wire.RandomPartition {
		t.Errorf("topic, partition = %q, %d; want clicks, -1 (static broker.list)", pr.Topic, pr.Partition)
	}
	if want := string(wire.NewMessageSet([]byte("a"), []byte("bb"), []byte(""))); string(pr.Messages) != want {
		t.Errorf("set = %x, want %x", pr.Messages, want)
	}
	if got := peer.messages("clicks"); strings.Join(got, ",") != "a,bb,,ccc" {
		t.Errorf("messages = %q", got)
	}
}

func TestSyncCompression(t *testing.T) {
	for _, tc := range []struct {
		codec      wire.Codec
		compressed []string
		topic      string
		want       wire.Codec
	}{
		{wire.CodecGzip, nil, "t", wire.CodecGzip},
		{wire.CodecSnappy, nil, "t", wire.CodecSnappy},
		{wire.CodecGzip, []string{"x", "t"}, "t", wire.CodecGzip},
		{wire.CodecGzip, []string{"x"}, "t", wire.CodecNone},
		{wire.CodecNone, []string{"t"}, "t", wire.CodecNone},
	} {
		t.Run(fmt.Sprintf("%v-%v", tc.codec, tc.compressed), func(t *testing.T) {
			peer := newPeer(t)
			cfg := testConfig(peer.brokerList(0))
			cfg.CompressionCodec, cfg.CompressedTopics = tc.codec, tc.compressed
			p := newProducer(t, cfg)
			msgs := values("one", "two", strings.Repeat("three", 100))
			if err := p.Send(t.Context(), tc.topic, msgs...); err != nil {
				t.Fatal(err)
			}
			set := peer.waitRequests(1)[0].req.Produce[0].Messages
			it := wire.NewIterator(set, 0)
			var shallow []wire.Codec
			for it.Next() {
				shallow = append(shallow, it.Message().Codec())
			}
			if tc.want != wire.CodecNone && (len(shallow) != 1 || shallow[0] != tc.want) {
				t.Errorf("shallow codecs = %v, want one %v message", shallow, tc.want)
			}
			if tc.want == wire.CodecNone && len(shallow) != 3 {
				t.Errorf("shallow codecs = %v, want 3 plain messages", shallow)
			}
			if got := payloads(t, set); strings.Join(got, ",") != "one,two,"+strings.Repeat("three", 100) {
				t.Errorf("messages = %q", got)
			}
		})
	}
}

// fixedCluster is a Cluster test double with known partitions, as the
// ZooKeeper registry gives.
type fixedCluster struct {
	parts []wire.BrokerPartition
	addrs map[wire.BrokerID]string
}

func (c *fixedCluster) Partitions(string) []wire.BrokerPartition { return c.parts }
func (c *fixedCluster) BrokerAddr(id wire.BrokerID) (string, bool) {
	a, ok := c.addrs[id]
	return a, ok
}

func TestKeyedSendGroupsByBrokerAndPartition(t *testing.T) {
	p0, p1 := newPeer(t), newPeer(t)
	cl := &fixedCluster{
		parts: []wire.BrokerPartition{{Broker: 0, Partition: 0}, {Broker: 0, Partition: 1}, {Broker: 1, Partition: 0}, {Broker: 1, Partition: 1}},
		addrs: map[wire.BrokerID]string{0: p0.addr(), 1: p1.addr()},
	}
	cfg := testConfig("")
	cfg.Cluster = cl
	p := newProducer(t, cfg)
	// DefaultPartitioner: Java hashCode mod 4: "a"=97 -> 1, "b"=98 -> 2,
	// "c"=99 -> 3, "d"=100 -> 0.
	msgs := []Message{
		{Key: []byte("a"), Value: []byte("a1")},
		{Key: []byte("b"), Value: []byte("b1")},
		{Key: []byte("d"), Value: []byte("d1")},
		{Key: []byte("a"), Value: []byte("a2")},
		{Key: []byte("c"), Value: []byte("c1")},
	}
	if err := p.Send(t.Context(), "t", msgs...); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i, peer := range []*peer{p0, p1} {
		reqs := peer.waitRequests(1)
		if len(reqs) != 1 || reqs[0].req.Type != wire.RequestMultiProduce {
			t.Fatalf("broker %d: got %d requests, first %v; want one MULTIPRODUCE", i, len(reqs), reqs[0].req.Type)
		}
		for _, pr := range reqs[0].req.Produce {
			got[fmt.Sprintf("%d-%d", i, pr.Partition)] = strings.Join(payloads(t, pr.Messages), ",")
		}
	}
	want := map[string]string{"0-1": "a1,a2", "1-0": "b1", "0-0": "d1", "1-1": "c1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("placement = %v, want %v", got, want)
	}

	// One partition of one broker: a plain PRODUCE.
	if err := p.Send(t.Context(), "t", Message{Key: []byte("d"), Value: []byte("d2")}); err != nil {
		t.Fatal(err)
	}
	r := p0.waitRequests(2)[1].req
	if r.Type != wire.RequestProduce || r.Produce[0].Partition != 0 {
		t.Errorf("got %v to partition %d, want PRODUCE to 0", r.Type, r.Produce[0].Partition)
	}
}

func TestStaticClusterIgnoresKeys(t *testing.T) {
	// 0.7's configSend: with a broker.list the broker picks the partition.
	peer := newPeer(t)
	p := newProducer(t, testConfig(peer.brokerList(3)))
	if err := p.Send(t.Context(), "t", Message{Key: []byte("k"), Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if pr := peer.waitRequests(1)[0].req.Produce[0]; pr.Partition != wire.RandomPartition {
		t.Errorf("partition = %d, want -1", pr.Partition)
	}
}

func TestPartitionerErrors(t *testing.T) {
	peer := newPeer(t)
	cfg := testConfig("")
	cfg.Cluster = &fixedCluster{parts: []wire.BrokerPartition{{Broker: 0, Partition: 0}, {Broker: 0, Partition: 1}}, addrs: map[wire.BrokerID]string{0: peer.addr()}}
	cfg.Partitioner = PartitionerFunc(func([]byte, int) int { return 2 })
	p := newProducer(t, cfg)
	err := p.Send(t.Context(), "t", Message{Key: []byte("k"), Value: []byte("v")})
	if !errors.Is(err, ErrInvalidPartition) {
		t.Errorf("err = %v, want ErrInvalidPartition", err)
	}
	cfg.Cluster = &fixedCluster{}
	p = newProducer(t, cfg)
	if err := p.Send(t.Context(), "t", values("v")...); !errors.Is(err, ErrNoBrokers) {
		t.Errorf("err = %v, want ErrNoBrokers", err)
	}
	cfg.Cluster = &fixedCluster{parts: []wire.BrokerPartition{{Broker: 7, Partition: 0}}}
	p = newProducer(t, cfg)
	if err := p.Send(t.Context(), "t", values("v")...); !errors.Is(err, ErrUnknownBroker) {
		t.Errorf("err = %v, want ErrUnknownBroker", err)
	}
}

func TestSendRejectsBadInput(t *testing.T) {
	peer := newPeer(t)
	cfg := testConfig(peer.brokerList(0))
	cfg.MaxMessageSize = 10
	p := newProducer(t, cfg)
	if err := p.Send(t.Context(), "t", values("short", "eleven bytes")...); !errors.Is(err, ErrMessageTooLarge) {
		t.Errorf("err = %v, want ErrMessageTooLarge", err)
	}
	for _, topic := range []string{"", "a/b", "../x", "..", "caf\xe9", strings.Repeat("t", 256)} {
		if err := p.Send(t.Context(), topic, values("v")...); !errors.Is(err, ErrInvalidTopic) {
			t.Errorf("topic %q: err = %v, want ErrInvalidTopic", topic, err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := p.Send(ctx, "t", values("v")...); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if err := p.Send(t.Context(), "t"); err != nil {
		t.Errorf("empty send: %v", err)
	}
	if n := len(peer.requests()); n != 0 {
		t.Errorf("peer got %d requests, want none", n)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Send(t.Context(), "t", values("v")...); !errors.Is(err, ErrClosed) {
		t.Errorf("err = %v, want ErrClosed", err)
	}
}

func TestReconnectAfterBrokerClosesConnection(t *testing.T) {
	peer := newPeer(t)
	peer.closeAt = 1 // the peer hangs up after each request
	cfg := testConfig(peer.brokerList(0))
	cfg.Confirm = ConfirmClose // with confirm=send each Send would fail (TestSyncSendRefused)
	p := newProducer(t, cfg)
	for i := range 3 {
		if err := p.Send(t.Context(), "t", values(fmt.Sprint(i))...); err != nil {
			t.Fatal(err)
		}
		peer.waitRequests(i + 1)
		// The producer notices the hang-up before its next write.
		c := p.conns[0]
		waitDead(t, c, "the producer to notice the hang-up")
	}
	reqs := peer.requests()
	for i, r := range reqs {
		if r.conn != i {
			t.Errorf("request %d came on connection %d, want %d", i, r.conn, i)
		}
	}
	if got := peer.messages("t"); strings.Join(got, ",") != "0,1,2" {
		t.Errorf("messages = %q", got)
	}
	// The peer hung up without confirming anything: no message is known
	// to be delivered, and Close says so.
	var loss *LossError
	if err := p.Close(); !errors.As(err, &loss) || loss.NotDelivered != 3 || loss.Accepted != 3 {
		t.Errorf("Close = %v, want 3 of 3 messages not delivered", err)
	}
}

func TestReconnectInterval(t *testing.T) {
	peer := newPeer(t)
	cfg := testConfig(peer.brokerList(0))
	cfg.ReconnectInterval = 2
	p := newProducer(t, cfg)
	for i := range 5 {
		if err := p.Send(t.Context(), "t", values(fmt.Sprint(i))...); err != nil {
			t.Fatal(err)
		}
	}
	reqs := peer.waitRequests(5)
	perConn := map[int][]string{}
	for _, r := range reqs {
		perConn[r.conn] = append(perConn[r.conn], payloads(t, r.req.Produce[0].Messages)...)
	}
	if got := fmt.Sprint(perConn); got != "map[0:[0 1] 1:[2 3] 2:[4]]" {
		t.Errorf("messages per connection = %s, want two per connection", got)
	}
}

func TestSendToDownBrokerFails(t *testing.T) {
	peer := newPeer(t)
	addr := peer.brokerList(0)
	peer.stop()
	cfg := testConfig(addr)
	cfg.ConnectTimeout = 50 * time.Millisecond
	p := newProducer(t, cfg)
	err := p.Send(t.Context(), "t", values("v")...)
	if err == nil || !strings.Contains(err.Error(), "connect") {
		t.Errorf("err = %v, want a connect error", err)
	}
}

func TestConcurrentSyncSends(t *testing.T) {
	peer := newPeer(t)
	p := newProducer(t, testConfig(peer.brokerList(0)))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				if err := p.Send(t.Context(), "t", values(fmt.Sprintf("%d-%d", g, i), "x")...); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := len(peer.waitMessages("t", 400)); got != 400 {
		t.Errorf("got %d messages, want 400", got)
	}
}

// waitDead waits until c's watcher has seen its connection close (it
// closes c.dead), so that the next write reconnects.
func waitDead(t *testing.T, c *brokerConn, what string) {
	t.Helper()
	wait.Within(t, 10*time.Second, what, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		select {
		case <-c.dead:
			return true
		default:
			return false
		}
	})
}
