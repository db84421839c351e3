package producer

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
)

// storedValues returns the values of a partition of a real broker, in log
// order, flushing it first.
func storedValues(t *testing.T, b *brokertest.Broker, topic string, partition wire.Partition) []string {
	t.Helper()
	b.Flush(t)
	c, err := consumer.NewSimpleConsumer(b.Addr, consumer.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []string
	for off := wire.Offset(0); ; {
		set, err := c.Fetch(t.Context(), topic, partition, off, 4<<20)
		if err != nil {
			t.Fatal(err)
		}
		it := set.Iterator()
		got := 0
		for it.Next() {
			out = append(out, string(it.Message().Payload))
			off = it.NextOffset()
			got++
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
		if got == 0 {
			return out
		}
	}
}

// The async sender writes the requests queued when it looks with one
// write, each still its own MULTIPRODUCE: at batch.size 1, messages to
// three partitions arrive complete and in order per partition, in fewer
// writes than requests.
func TestAsyncRunKeepsOrderPerPartition(t *testing.T) {
	bcfg := brokertest.Config()
	bcfg.Log.NumPartitions = 3
	b := brokertest.Start(t, bcfg)
	cfg := testConfig("")
	cfg.Cluster = &fixedCluster{
		parts: []wire.BrokerPartition{{Broker: 0, Partition: 0}, {Broker: 0, Partition: 1}, {Broker: 0, Partition: 2}},
		addrs: map[wire.BrokerID]string{0: b.Addr},
	}
	cfg.Type, cfg.BatchSize, cfg.EnqueueTimeout = Async, 1, -1
	p := newProducer(t, cfg)
	const keys, perKey = 3, 3000
	for i := range keys * perKey {
		k := i % keys
		m := Message{Key: []byte{byte('a' + k)}, Value: fmt.Appendf(nil, "%c %d", 'a'+k, i/keys)}
		if err := p.Send(t.Context(), "order", m); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	c := p.conns[0]
	c.mu.Lock()
	writes := c.writes
	c.mu.Unlock()
	if writes >= keys*perKey {
		t.Fatalf("%d writes for %d requests: no run was written with one write", writes, keys*perKey)
	}
	next := map[byte]int{}
	for part := wire.Partition(0); part < 3; part++ {
		for _, v := range storedValues(t, b, "order", part) {
			key, seq, ok := bytes.Cut([]byte(v), []byte(" "))
			n, err := strconv.Atoi(string(seq))
			if !ok || len(key) != 1 || err != nil {
				t.Fatalf("partition %d: unexpected value %q", part, v)
			}
			if n != next[key[0]] {
				t.Fatalf("partition %d: key %c: got %d, want %d (out of order or missing)", part, key[0], n, next[key[0]])
			}
			next[key[0]]++
		}
	}
	for k := range keys {
		if got := next[byte('a'+k)]; got != perKey {
			t.Fatalf("key %c: %d of %d messages stored", 'a'+k, got, perKey)
		}
	}
	t.Logf("%d requests in %d writes", keys*perKey, writes)
}
