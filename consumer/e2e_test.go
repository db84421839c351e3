package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/producer"
)

// fixture is a real broker with a producer and a simple consumer.
type fixture struct {
	t      *testing.T
	broker *brokertest.Broker
	c      *consumer.SimpleConsumer
}

func start(t *testing.T, partitions int) *fixture {
	t.Helper()
	cfg := brokertest.Config()
	cfg.Log.NumPartitions = partitions
	b := brokertest.Start(t, cfg)
	c, err := consumer.NewSimpleConsumer(b.Addr, consumer.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return &fixture{t: t, broker: b, c: c}
}

// producer returns a producer whose cluster lists partitions 0..n-1 of the
// broker (as the ZooKeeper registry would), so keys choose partitions.
func (f *fixture) producer(mod func(*producer.Config)) *producer.Producer {
	f.t.Helper()
	cfg := producer.DefaultConfig()
	cfg.BrokerList = "0:" + f.broker.Addr
	if mod != nil {
		mod(&cfg)
	}
	p, err := producer.New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { p.Close() })
	return p
}

// partitionsCluster lists partitions 0..n-1 of one broker.
type partitionsCluster struct {
	addr  string
	parts []wire.BrokerPartition
}

func newPartitionsCluster(addr string, n int) *partitionsCluster {
	c := &partitionsCluster{addr: addr}
	for i := range n {
		c.parts = append(c.parts, wire.BrokerPartition{Broker: 0, Partition: wire.Partition(i)})
	}
	return c
}

func (c *partitionsCluster) Partitions(string) []wire.BrokerPartition   { return c.parts }
func (c *partitionsCluster) BrokerAddr(id wire.BrokerID) (string, bool) { return c.addr, id == 0 }

type delivered struct {
	payload string
	next    wire.Offset
}

// readAll fetches the partition from offset to the end with the given fetch
// size and returns every message with its next offset.
func (f *fixture) readAll(topic string, partition wire.Partition, offset wire.Offset, fetchSize int) []delivered {
	f.t.Helper()
	var out []delivered
	for {
		set, err := f.c.Fetch(f.t.Context(), topic, partition, offset, fetchSize)
		if err != nil {
			f.t.Fatal(err)
		}
		it := set.Iterator()
		n := 0
		for it.Next() {
			out = append(out, delivered{string(it.Payload()), it.NextOffset()})
			offset = it.NextOffset()
			n++
		}
		if err := it.Err(); err != nil {
			f.t.Fatal(err)
		}
		if n == 0 {
			return out
		}
	}
}

// waitLogEnd waits until the partition's log ends at or after want.
func (f *fixture) waitLogEnd(topic string, partition wire.Partition, want wire.Offset) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		offs, err := f.c.OffsetsBefore(f.t.Context(), topic, partition, wire.LatestTime, 1)
		if err == nil && len(offs) == 1 && offs[0] >= want {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("log end of %s-%d: %v, %v; want %d", topic, partition, offs, err, want)
		}
		<-time.After(time.Millisecond)
	}
}

func payloadsOf(ds []delivered) string {
	var s []string
	for _, d := range ds {
		s = append(s, d.payload)
	}
	return strings.Join(s, ",")
}

func TestSyncProduceFetchExactBytesAndOffsets(t *testing.T) {
	f := start(t, 1)
	p := f.producer(nil)
	msgs := []string{"first", "", strings.Repeat("x", 300), "last"}
	for _, m := range msgs {
		if err := p.Send(t.Context(), "clicks", producer.Message{Value: []byte(m)}); err != nil {
			t.Fatal(err)
		}
	}
	var want []byte
	for _, m := range msgs {
		want = wire.AppendMessage(want, []byte(m))
	}
	f.waitLogEnd("clicks", 0, wire.Offset(len(want)))
	set, err := f.c.Fetch(t.Context(), "clicks", 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if string(set.Bytes) != string(want) {
		t.Fatalf("fetched %d bytes %x, want the %d produced", len(set.Bytes), set.Bytes, len(want))
	}
	got := f.readAll("clicks", 0, 0, 1<<20)
	next := wire.Offset(0)
	for i, d := range got {
		next += wire.Offset(wire.Overhead + len(msgs[i]))
		if d.payload != msgs[i] || d.next != next {
			t.Errorf("message %d = %q next %d, want %q next %d", i, d.payload, d.next, msgs[i], next)
		}
	}
	if len(got) != len(msgs) {
		t.Errorf("got %d messages, want %d", len(got), len(msgs))
	}
	offs, err := f.c.OffsetsBefore(t.Context(), "clicks", 0, wire.EarliestTime, 10)
	if err != nil || len(offs) != 1 || offs[0] != 0 {
		t.Errorf("earliest = %v, %v; want [0]", offs, err)
	}
	// 0.7: the log end, then the segments' starts, newest first.
	offs, err = f.c.OffsetsBefore(t.Context(), "clicks", 0, wire.LatestTime, 10)
	if err != nil || len(offs) != 2 || offs[0] != next || offs[1] != 0 {
		t.Errorf("latest = %v, %v; want [%d 0]", offs, err, next)
	}
}

func TestAsyncAndCompressedProduce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		async bool
		codec wire.Codec
	}{
		{"async", true, wire.CodecNone},
		{"sync-gzip", false, wire.CodecGzip},
		{"sync-snappy", false, wire.CodecSnappy},
		{"async-gzip", true, wire.CodecGzip},
		{"async-snappy", true, wire.CodecSnappy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := start(t, 1)
			p := f.producer(func(c *producer.Config) {
				if tc.async {
					c.Type, c.BatchSize, c.QueueTime = producer.Async, 10, time.Hour
				}
				c.CompressionCodec = tc.codec
			})
			var want []string
			for i := range 25 {
				m := fmt.Sprintf("message-%02d-%s", i, strings.Repeat("z", i))
				want = append(want, m)
				if err := p.Send(t.Context(), "t", producer.Message{Value: []byte(m)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Close(); err != nil { // async: sends the last 5
				t.Fatal(err)
			}
			// The log holds one wrapper per request when compressed.
			deadline := time.Now().Add(10 * time.Second)
			var got []delivered
			for len(got) < len(want) && time.Now().Before(deadline) {
				got = f.readAll("t", 0, 0, 1<<20)
			}
			if payloadsOf(got) != strings.Join(want, ",") {
				t.Fatalf("got %q, want %q", payloadsOf(got), want)
			}
			end, err := f.c.OffsetsBefore(t.Context(), "t", 0, wire.LatestTime, 1)
			if err != nil {
				t.Fatal(err)
			}
			if last := got[len(got)-1].next; last != end[0] {
				t.Errorf("last next offset %d, log end %d", last, end[0])
			}
			set, err := f.c.Fetch(t.Context(), "t", 0, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			shallow := wire.NewIterator(set.Bytes, 0)
			n := 0
			for shallow.Next() {
				n++
				if c := shallow.Message().Codec(); c != tc.codec {
					t.Fatalf("stored message %d has codec %v, want %v (stored as sent)", n, c, tc.codec)
				}
			}
			if tc.codec != wire.CodecNone {
				wantWrappers := 25 // sync: one request per Send
				if tc.async {
					wantWrappers = 3 // batches of 10, 10, 5
				}
				if n != wantWrappers {
					t.Errorf("%d compressed messages stored, want %d", n, wantWrappers)
				}
				// Within a wrapper every message but the last points back at
				// the wrapper; the consumer refetches it (0.7 semantics).
				if tc.async && got[0].next != 0 {
					t.Errorf("first inner message next offset %d, want 0 (the wrapper)", got[0].next)
				}
			}
		})
	}
}

func TestSeveralPartitionsAndMultiFetch(t *testing.T) {
	f := start(t, 4)
	p := f.producer(func(c *producer.Config) { c.Cluster = newPartitionsCluster(f.broker.Addr, 4) })
	// Java hashCode mod 4 of "k0".."k7" spreads them; keep what the
	// partitioner says to compare.
	want := map[wire.Partition][]string{}
	var batch []producer.Message
	for i := range 40 {
		key := fmt.Sprintf("k%d", i%8)
		v := fmt.Sprintf("v%d", i)
		part := wire.Partition((producer.DefaultPartitioner{}).Partition([]byte(key), 4))
		want[part] = append(want[part], v)
		batch = append(batch, producer.Message{Key: []byte(key), Value: []byte(v)})
	}
	if err := p.Send(t.Context(), "multi", batch...); err != nil { // one MULTIPRODUCE
		t.Fatal(err)
	}
	if len(want) < 2 {
		t.Fatalf("keys landed in %d partitions; the test needs several", len(want))
	}
	for part, vs := range want {
		size := wire.Offset(0)
		for _, v := range vs {
			size += wire.Offset(wire.Overhead + len(v))
		}
		f.waitLogEnd("multi", part, size)
	}
	var reqs []consumer.FetchRequest
	for part := range wire.Partition(4) {
		reqs = append(reqs, consumer.FetchRequest{Topic: "multi", Partition: part, Offset: 0, MaxSize: 1 << 16})
	}
	reqs = append(reqs, consumer.FetchRequest{Topic: "multi", Partition: 0, Offset: 1 << 40})
	sets, err := f.c.MultiFetch(t.Context(), reqs...)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 5 {
		t.Fatalf("got %d sets, want 5", len(sets))
	}
	for part := range wire.Partition(4) {
		var got []string
		it := sets[part].Iterator()
		for it.Next() {
			got = append(got, string(it.Payload()))
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, ",") != strings.Join(want[part], ",") {
			t.Errorf("partition %d: %q, want %q", part, got, want[part])
		}
	}
	if err := sets[4].Err(); !errors.Is(err, wire.ErrOffsetOutOfRange) {
		t.Errorf("out-of-range part: %v, want ErrOffsetOutOfRange", err)
	}
	if it := sets[4].Iterator(); it.Next() || !errors.Is(it.Err(), wire.ErrOffsetOutOfRange) {
		t.Errorf("iterating the out-of-range part: %v", it.Err())
	}
}

func TestRewindAndOffsets(t *testing.T) {
	f := start(t, 1)
	p := f.producer(nil)
	for i := range 10 {
		if err := p.Send(t.Context(), "r", producer.Message{Value: []byte(fmt.Sprint("m", i))}); err != nil {
			t.Fatal(err)
		}
	}
	f.waitLogEnd("r", 0, 10*wire.Offset(wire.Overhead+2))
	all := f.readAll("r", 0, 0, 1<<20)
	if len(all) != 10 {
		t.Fatalf("got %d messages", len(all))
	}
	// Rewind to the 4th message: the same messages again.
	again := f.readAll("r", 0, all[2].next, 1<<20)
	if payloadsOf(again) != payloadsOf(all[3:]) {
		t.Errorf("rewind gave %q, want %q", payloadsOf(again), payloadsOf(all[3:]))
	}
	// Small fetches: each holds one message and part of the next.
	small := f.readAll("r", 0, 0, wire.Overhead+2+5)
	if payloadsOf(small) != payloadsOf(all) {
		t.Errorf("small fetches gave %q", payloadsOf(small))
	}
	_, err := f.c.Fetch(t.Context(), "r", 0, all[9].next+1000, 0)
	var be *consumer.BrokerError
	if !errors.Is(err, wire.ErrOffsetOutOfRange) || !errors.As(err, &be) || be.Code != wire.CodeOffsetOutOfRange {
		t.Errorf("fetch past the end: %v, want OffsetOutOfRange", err)
	}
	// At the end: an empty set, not an error.
	set, err := f.c.Fetch(t.Context(), "r", 0, all[9].next, 0)
	if err != nil || len(set.Bytes) != 0 {
		t.Errorf("fetch at the end: %d bytes, %v", len(set.Bytes), err)
	}
}

func TestMessageLargerThanFetchSize(t *testing.T) {
	f := start(t, 1)
	p := f.producer(nil)
	if err := p.Send(t.Context(), "big", producer.Message{Value: make([]byte, 1000)}); err != nil {
		t.Fatal(err)
	}
	f.waitLogEnd("big", 0, 1009)
	set, err := f.c.Fetch(t.Context(), "big", 0, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	it := set.Iterator()
	if it.Next() {
		t.Fatal("delivered a message that does not fit")
	}
	var tl *consumer.MessageTooLargeError
	if !errors.As(it.Err(), &tl) || tl.Size != 1009 || tl.FetchSize != 100 || tl.Offset != 0 {
		t.Fatalf("err = %v, want MessageTooLargeError{0, 1009, 100}", it.Err())
	}
	if want := "message at offset 0 is 1009 bytes, larger than the fetch size 100"; !strings.Contains(it.Err().Error(), want) {
		t.Errorf("error %q does not say %q", it.Err(), want)
	}
}

func TestConsumerReconnectsAfterBrokerRestart(t *testing.T) {
	f := start(t, 1)
	p := f.producer(nil)
	if err := p.Send(t.Context(), "re", producer.Message{Value: []byte("before")}); err != nil {
		t.Fatal(err)
	}
	f.waitLogEnd("re", 0, 15)
	f.broker = f.broker.Restart(t)
	got := f.readAll("re", 0, 0, 1<<20) // the old connection is dead: reconnect and retry
	if payloadsOf(got) != "before" {
		t.Errorf("after restart: %q", payloadsOf(got))
	}
}

func TestRequestsHonourContext(t *testing.T) {
	f := start(t, 1)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := f.c.Fetch(ctx, "t", 0, 0, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want Canceled", err)
	}
	if _, err := f.c.Fetch(t.Context(), "t", 0, -1, 0); err == nil {
		t.Errorf("negative offset accepted")
	}
	if _, err := f.c.Fetch(t.Context(), "", 0, 0, 0); err == nil {
		t.Errorf("empty topic accepted")
	}
	if _, err := f.c.OffsetsBefore(t.Context(), "t", 0, -1, 0); err == nil {
		t.Errorf("maxNum 0 accepted")
	}
}
