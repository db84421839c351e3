package producer

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/replicatest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/zkcoord"
)

// clusterTimeout bounds the waits on a replicated cluster (elections).
const clusterTimeout = replicatest.Timeout

func clusterLog() *slog.Logger {
	if os.Getenv("PRODUCER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startReplicated starts n real brokers with the replication layer and a
// real ZooKeeper (replicatest.StartCluster), logging to clusterLog.
func startReplicated(t testing.TB, n int, mod func(c *replicatest.Settings)) *replicatest.Cluster {
	t.Helper()
	return replicatest.StartCluster(t, n, func(c *replicatest.Settings) {
		c.Logger = clusterLog().With("broker", c.BrokerID)
		if mod != nil {
			mod(c)
		}
	})
}

// ackedStream is a producer sending one message after another in the
// background (streamAcked), recording the values acknowledged.
type ackedStream struct {
	mu     sync.Mutex
	acked  []string
	marked chan struct{}
	// done receives nil once more messages are acknowledged after mark,
	// or the first error of a send.
	done chan error
}

// streamAcked starts sending with send, which sends the i-th message and
// returns its value, until more messages are acknowledged after mark.
func streamAcked(more int, send func(i int) (string, error)) *ackedStream {
	s := &ackedStream{marked: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		base := -1
		for i := 0; ; i++ {
			v, err := send(i)
			if err != nil {
				s.done <- err
				return
			}
			s.mu.Lock()
			s.acked = append(s.acked, v)
			n := len(s.acked)
			s.mu.Unlock()
			select {
			case <-s.marked:
				if base < 0 {
					base = n
				} else if n >= base+more {
					s.done <- nil
					return
				}
			default:
			}
		}
	}()
	return s
}

// mark starts the count of the last messages (the fault happened).
func (s *ackedStream) mark() { close(s.marked) }

// count is how many messages are acknowledged so far.
func (s *ackedStream) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.acked)
}

// values are the acknowledged values so far, in order.
func (s *ackedStream) values() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.acked...)
}

// waitReadable waits up to clusterTimeout until every value of want is
// readable from partition 0 of topic on addr, and returns those that are
// not (none when all are).
func waitReadable(t *testing.T, addr, topic string, want []string) []string {
	t.Helper()
	var missing []string
	wait.Until(clusterTimeout, func() bool {
		have := map[string]bool{}
		for _, v := range readAll(t, addr, topic, 0) {
			have[v] = true
		}
		missing = missing[:0]
		for _, v := range want {
			if !have[v] {
				missing = append(missing, v)
			}
		}
		return len(missing) == 0
	})
	return missing
}

// readAll reads a partition of a broker from offset 0 with 0.7 FETCHes,
// until an empty answer (a replicated partition's fetch stops at its high
// watermark).
func readAll(t *testing.T, addr, topic string, partition wire.Partition) []string {
	t.Helper()
	c, err := consumer.NewSimpleConsumer(addr, consumer.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	var off wire.Offset
	for {
		set, err := c.Fetch(t.Context(), topic, partition, off, 1<<20)
		if err != nil {
			t.Fatalf("fetch %s-%d at %d from %s: %v", topic, partition, off, addr, err)
		}
		it := set.Iterator()
		n := 0
		for it.Next() {
			got = append(got, string(it.Payload()))
			n++
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
		if n == 0 {
			return got
		}
		off = it.NextOffset()
	}
}

func acksConfig(brokerList string, acks int16) Config {
	cfg := testConfig(brokerList)
	cfg.RequiredAcks = acks
	cfg.RequestTimeout = 5 * time.Second
	cfg.MessageSendMaxRetries = 100
	cfg.RetryBackoff = 100 * time.Millisecond
	cfg.Logger = clusterLog().With("client", "producer")
	return cfg
}

// TestReplicatedCluster runs three brokers with the replication layer
// (min.insync.replicas=2) and, in order: acks=-1 to an RF=3 topic from
// broker.list and acks=1 from zk.connect, all acknowledged and readable on
// every replica; the leader stopped mid-stream, with nothing acknowledged
// lost; one live replica of an RF=2 topic, refused with NotEnoughReplicas
// and nothing appended; acks=1 and acks=0 on a 0.7 topic.
func TestReplicatedCluster(t *testing.T) {
	c := startReplicated(t, 3, func(cfg *replicatest.Settings) { cfg.Replica.MinInsyncReplicas = 2 })
	c.CreateTopic("r3", zkcoord.Assignment{0: {0, 1, 2}, 1: {1, 2, 0}})
	c.CreateTopic("r2", zkcoord.Assignment{0: {2, 1}})
	for p := range 2 {
		c.WaitISR("r3", wire.Partition(p), 3)
	}
	c.WaitISR("r2", 0, 2)

	var sent []string
	t.Run("acks=all", func(t *testing.T) {
		p := newProducer(t, acksConfig(c.BrokerList(), wire.AcksAll))
		for i := range 20 {
			batch := make([]Message, 5)
			for j := range batch {
				v := fmt.Sprintf("all-%d-%d", i, j)
				batch[j] = Message{Value: []byte(v)}
				if j%2 == 1 {
					batch[j].Key = []byte(v) // keyed: spread over both partitions
				}
				sent = append(sent, v)
			}
			if err := p.Send(t.Context(), "r3", batch...); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("acks=1 from zk.connect", func(t *testing.T) {
		cfg := acksConfig("", wire.AcksLeader)
		cfg.ZkConnect = c.Connect
		p := newProducer(t, cfg)
		for i := range 10 {
			v := fmt.Sprintf("one-%d", i)
			sent = append(sent, v)
			if err := p.Send(t.Context(), "r3", Message{Key: []byte(v), Value: []byte(v)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("acks=0 from zk.connect", func(t *testing.T) {
		// 0.7's registry does not list a replicated topic: the producer
		// finds it in ZooKeeper and sends to the leaders, in PRODUCE_ACKS.
		cfg := acksConfig("", wire.AcksNone)
		cfg.ZkConnect = c.Connect
		p := newProducer(t, cfg)
		for i := range 10 {
			v := fmt.Sprintf("zero-%d", i)
			sent = append(sent, v)
			if err := p.Send(t.Context(), "r3", Message{Key: []byte(v), Value: []byte(v)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if len(p.conns) != 0 {
			t.Errorf("acks=0 to a replicated topic opened %d 0.7 connections", len(p.conns))
		}
	})
	t.Run("every replica holds every acknowledged message", func(t *testing.T) {
		// acks=1 returns before the followers copy: wait for the HW.
		wait.Within(t, clusterTimeout, "every replica to hold every message", func() bool {
			for id, nd := range c.Nodes {
				var got []string
				for p := range 2 {
					got = append(got, readAll(t, nd.B.Addr, "r3", wire.Partition(p))...)
				}
				if !sameSet(got, sent) {
					t.Logf("broker %d has %d messages of %d", id, len(got), len(sent))
					return false
				}
			}
			return true
		})
	})

	t.Run("async acks=all", func(t *testing.T) {
		cfg := acksConfig(c.BrokerList(), wire.AcksAll)
		cfg.Type, cfg.BatchSize, cfg.QueueTime = Async, 7, 20*time.Millisecond
		p := newProducer(t, cfg)
		for i := range 50 {
			v := fmt.Sprintf("async-all-%d", i)
			sent = append(sent, v)
			if err := p.Send(t.Context(), "r3", Message{Key: []byte(v), Value: []byte(v)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if st := p.Stats(); st.Accepted != 50 || st.NotDelivered != 0 {
			t.Fatalf("stats %+v", st)
		}
		var got []string
		wait.Within(t, clusterTimeout, "the async messages to be readable", func() bool {
			got = got[:0]
			for pn := range 2 {
				st, _, _, _ := zkcoord.ReplicationOn(c.ZK).PartitionStateOf("r3", wire.Partition(pn))
				got = append(got, readAll(t, c.Nodes[st.Leader].B.Addr, "r3", wire.Partition(pn))...)
			}
			return sameSet(got, sent)
		})
	})

	t.Run("leader stopped mid-stream", func(t *testing.T) {
		st := c.WaitISR("r3", 0, 3)
		p := newProducer(t, acksConfig(c.BrokerList(), wire.AcksAll))
		// 50 more after the stop: they went through the election.
		s := streamAcked(50, func(i int) (string, error) {
			v := fmt.Sprintf("failover-%d", i)
			// Keyed to partition 0, whose leader is stopped.
			return v, p.Send(t.Context(), "r3", Message{Key: keyFor(t, 0, 2), Value: []byte(v)})
		})
		wait.Within(t, clusterTimeout, "30 acknowledged messages before the stop", func() bool { return s.count() >= 30 })
		c.Stop(st.Leader)
		s.mark()
		select {
		case err := <-s.done:
			if err != nil {
				t.Fatalf("the producer did not carry on after the leader %d stopped: %v", st.Leader, err)
			}
		case <-time.After(clusterTimeout):
			t.Fatal("the producer made no progress after the leader stopped")
		}
		now := c.WaitISR("r3", 0, 2)
		if now.Leader == st.Leader {
			t.Fatalf("leader still %d", now.Leader)
		}
		// The new leader exposes what its ISR holds once its follower has
		// fetched (its HW); every acknowledged message must be there.
		acked := s.values()
		if missing := waitReadable(t, c.Nodes[now.Leader].B.Addr, "r3", acked); len(missing) > 0 {
			t.Fatalf("%d acknowledged messages lost after the failover (leader %d -> %d), first %q", len(missing), st.Leader, now.Leader, missing[0])
		}
		t.Logf("%d acknowledged, all on the new leader %d (was %d)", len(acked), now.Leader, st.Leader)
	})

	t.Run("not enough replicas", func(t *testing.T) {
		// r2's replicas are 2 and 1, and the failover above may have
		// stopped one of them; stop the other follower, if any, leaving
		// one live replica.
		var st zkcoord.PartitionState
		wait.Within(t, clusterTimeout, "r2-0 to have a live leader", func() bool {
			s, _, ok, err := zkcoord.ReplicationOn(c.ZK).PartitionStateOf("r2", 0)
			st = s
			return err == nil && ok && c.Nodes[s.Leader] != nil
		})
		for _, id := range []wire.BrokerID{2, 1} {
			if id != st.Leader && c.Nodes[id] != nil {
				c.Stop(id)
			}
		}
		st = c.WaitISR("r2", 0, 1)
		cfg := acksConfig(c.BrokerList(), wire.AcksAll)
		cfg.MessageSendMaxRetries = 2
		p := newProducer(t, cfg)
		err := p.Send(t.Context(), "r2", values("refused")...)
		if !errors.Is(err, wire.ErrNotEnoughReplicas) {
			t.Fatalf("got %v, want NotEnoughReplicas", err)
		}
		var pe *ProduceError
		if !errors.As(err, &pe) || pe.Broker != st.Leader || pe.Topic != "r2" || pe.Partition != 0 || pe.Attempts != 3 || pe.Messages != 1 {
			t.Fatalf("error %#v: want broker %d, topic r2, partition 0, 3 attempts, 1 message", pe, st.Leader)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("broker %d", st.Leader)) || !strings.Contains(err.Error(), "topic r2 partition 0") {
			t.Fatalf("error %q does not name the broker, topic and partition", err)
		}
		// Async: every refused message is counted, none silently dropped.
		acfg := acksConfig(c.BrokerList(), wire.AcksAll)
		acfg.MessageSendMaxRetries, acfg.Type, acfg.BatchSize = 1, Async, 4
		var handled []error
		var hmu sync.Mutex
		acfg.ErrorHandler = func(err error) { hmu.Lock(); handled = append(handled, err); hmu.Unlock() }
		ap := newProducer(t, acfg)
		for i := range 10 {
			if err := ap.Send(t.Context(), "r2", values(fmt.Sprintf("async-%d", i))...); err != nil {
				t.Fatal(err)
			}
		}
		var loss *LossError
		if err := ap.Close(); !errors.As(err, &loss) || loss.NotDelivered != 10 || loss.Accepted != 10 || !errors.Is(err, wire.ErrNotEnoughReplicas) {
			t.Fatalf("async Close = %v, want 10 of 10 not delivered, NotEnoughReplicas", err)
		}
		hmu.Lock()
		n := 0
		for _, err := range handled {
			var ae *AsyncError
			if !errors.As(err, &ae) || !errors.As(err, &pe) || pe.Topic != "r2" {
				t.Fatalf("handler got %v", err)
			}
			n += ae.Messages
		}
		hmu.Unlock()
		if n != 10 {
			t.Fatalf("the error handler was told of %d lost messages, want 10", n)
		}

		// acks=1 is not bound by min.insync.replicas.
		one := newProducer(t, acksConfig(c.BrokerList(), wire.AcksLeader))
		if err := one.Send(t.Context(), "r2", values("accepted")...); err != nil {
			t.Fatal(err)
		}
		// The refused send appended nothing. (The ISR is the leader alone,
		// so the HW is its log end.)
		wait.Within(t, clusterTimeout, "the accepted message to be readable", func() bool {
			return len(readAll(t, c.Nodes[st.Leader].B.Addr, "r2", 0)) > 0
		})
		if got := readAll(t, c.Nodes[st.Leader].B.Addr, "r2", 0); !slices.Equal(got, []string{"accepted"}) {
			t.Fatalf("r2-0 holds %q, want only the acks=1 message", got)
		}
	})

	t.Run("0.7 topic", func(t *testing.T) {
		// A topic without a 0.8 assignment: acks=1 goes the 0.7 way,
		// confirmed by the round trip; acks=0 is the 0.7 producer.
		for _, acks := range []int16{wire.AcksLeader, wire.AcksNone} {
			p := newProducer(t, acksConfig(c.BrokerList(), acks))
			v := fmt.Sprintf("plain-%d", acks)
			if err := p.Send(t.Context(), "plain", values(v)...); err != nil {
				t.Fatalf("acks=%d: %v", acks, err)
			}
			if err := p.Close(); err != nil {
				t.Fatalf("acks=%d: %v", acks, err)
			}
		}
		// Readers see what is flushed: wait for it.
		wait.Within(t, clusterTimeout, "both messages to be readable", func() bool {
			var got []string
			for _, nd := range c.Nodes {
				got = append(got, readPlain(t, nd.B.Addr, "plain")...)
			}
			if len(got) > 2 {
				t.Fatalf("0.7 topic holds %q", got)
			}
			return sameSet(got, []string{"plain-1", "plain-0"})
		})
	})
}

// TestAcksOnA2011Broker: a broker without the replication layer closes the
// connection of a METADATA request; with acks=1 the producer takes the
// topic as a 0.7 topic and confirms each send with the round trip.
func TestAcksOnA2011Broker(t *testing.T) {
	b := brokertest.Start(t, brokertest.Config())
	p := newProducer(t, acksConfig("0:"+b.Addr, wire.AcksLeader))
	if err := p.Send(t.Context(), "t", values("a", "b")...); err != nil {
		t.Fatal(err)
	}
	if got := readPartition(t, b.Addr, "t", 0, 2); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("got %q", got)
	}
	// Async: every batch is confirmed (confirm=send), whatever Confirm's
	// async default.
	cfg := acksConfig("0:"+b.Addr, wire.AcksAll)
	cfg.Type, cfg.BatchSize = Async, 2
	ap := newProducer(t, cfg)
	if err := ap.Send(t.Context(), "t", values("c", "d", "e")...); err != nil {
		t.Fatal(err)
	}
	if err := ap.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readPartition(t, b.Addr, "t", 0, 5); !slices.Equal(got, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("got %q", got)
	}
	// A broker that is down: no metadata, after the retries.
	b2 := brokertest.Start(t, brokertest.Config())
	addr := b2.Addr
	if err := b2.Stop(); err != nil {
		t.Fatal(err)
	}
	dcfg := acksConfig("5:"+addr, wire.AcksLeader)
	dcfg.MessageSendMaxRetries, dcfg.RetryBackoff = 2, 10*time.Millisecond
	dp := newProducer(t, dcfg)
	if err := dp.Send(t.Context(), "t", values("x")...); err == nil || !strings.Contains(err.Error(), "no broker answered METADATA") ||
		!strings.Contains(err.Error(), "broker 5") {
		t.Fatalf("send with no live broker: %v", err)
	}
}

// readPlain reads partition 0 of a 0.7 topic on a broker that may not
// have it.
func readPlain(t *testing.T, addr, topic string) []string {
	t.Helper()
	c, err := consumer.NewSimpleConsumer(addr, consumer.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	set, err := c.Fetch(t.Context(), topic, 0, 0, 1<<20)
	if errors.Is(err, wire.ErrWrongPartition) || (err != nil && strings.Contains(err.Error(), "WrongPartition")) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	it := set.Iterator()
	for it.Next() {
		got = append(got, string(it.Payload()))
	}
	return got
}

// keyFor returns a key the default partitioner sends to partition p of n.
func keyFor(t *testing.T, p, n int) []byte {
	for i := range 1000 {
		k := []byte(fmt.Sprintf("k%d", i))
		if (DefaultPartitioner{}).Partition(k, n) == p {
			return k
		}
	}
	t.Fatal("no key")
	return nil
}

func sameSet(got, want []string) bool {
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}

// TestNotEnoughReplicasAfterAppend: the follower of an RF=2 topic
// (min.insync.replicas=2) stops just before an acks=-1 send; the leader
// appends it (the ISR still has two members), waits, then drops the
// follower from the ISR after replica.lag.time.max.ms and answers
// NotEnoughReplicasAfterAppend. The caller gets that error after one
// attempt (no retry: the message is in the leader's log, once).
func TestNotEnoughReplicasAfterAppend(t *testing.T) {
	c := startReplicated(t, 2, func(cfg *replicatest.Settings) {
		cfg.Replica.MinInsyncReplicas = 2
		cfg.Replica.LagTime = 3 * time.Second // the window between the stop and the shrink
	})
	c.CreateTopic("a", zkcoord.Assignment{0: {0, 1}})
	st := c.WaitISR("a", 0, 2)
	cfg := acksConfig(c.BrokerList(), wire.AcksAll)
	cfg.RequestTimeout = 20 * time.Second
	p := newProducer(t, cfg)
	if err := p.Send(t.Context(), "a", values("before")...); err != nil {
		t.Fatal(err)
	}
	follower := st.ISR[0]
	if follower == st.Leader {
		follower = st.ISR[1]
	}
	c.Stop(follower)
	err := p.Send(t.Context(), "a", values("after")...)
	var pe *ProduceError
	if !errors.Is(err, wire.ErrNotEnoughReplicasAfterAppend) || !errors.As(err, &pe) || pe.Attempts != 1 || pe.Broker != st.Leader {
		t.Fatalf("got %v (%+v), want NotEnoughReplicasAfterAppend from broker %d after one attempt", err, pe, st.Leader)
	}
	wait.Within(t, clusterTimeout, "the leader to expose both messages", func() bool {
		got := readAll(t, c.Nodes[st.Leader].B.Addr, "a", 0)
		if len(got) > 2 {
			t.Fatalf("leader holds %q: the refused send was written twice", got)
		}
		return slices.Equal(got, []string{"before", "after"})
	})
}
