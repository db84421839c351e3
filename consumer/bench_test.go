package consumer_test

import (
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/producer"

	"github.com/netdb11/kafka/broker/wire"
)

// BenchmarkFetch1MiB consumes 200-byte messages with 1 MiB fetches from a
// real broker on this machine (the paper's §5 consumer test, with larger
// fetches): each op is one message.
func BenchmarkFetch1MiB(b *testing.B) {
	cfg := brokertest.Config()
	cfg.Log.FlushInterval = 10000
	cfg.Log.FlushIntervalTime = 100 * time.Millisecond
	br := brokertest.Start(b, cfg)
	pc := producer.DefaultConfig()
	pc.BrokerList = "0:" + br.Addr
	p, err := producer.New(pc)
	if err != nil {
		b.Fatal(err)
	}
	const total = 200_000
	msgs := make([]producer.Message, 100)
	for i := range msgs {
		msgs[i].Value = make([]byte, 200)
	}
	for range total / len(msgs) {
		if err := p.Send(b.Context(), "perf", msgs...); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		b.Fatal(err)
	}
	c, err := consumer.NewSimpleConsumer(br.Addr, consumer.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	end := wire.Offset(total * 209)
	deadline := time.Now().Add(10 * time.Second)
	for {
		offs, err := c.OffsetsBefore(b.Context(), "perf", 0, -1, 1)
		if err != nil {
			b.Fatal(err)
		}
		if offs[0] >= end {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("log end %d, want %d", offs[0], end)
		}
		<-time.After(10 * time.Millisecond)
	}
	b.SetBytes(200)
	b.ReportAllocs()
	b.ResetTimer()
	offset := wire.Offset(0)
	n := 0
	for n < b.N {
		set, err := c.Fetch(b.Context(), "perf", 0, offset, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		it := set.Iterator()
		got := 0
		for it.Next() && n < b.N {
			offset = it.NextOffset()
			n++
			got++
		}
		if it.Err() != nil {
			b.Fatal(it.Err())
		}
		if got == 0 || offset >= end {
			offset = 0 // wrap around
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msg/s")
}
