package producer_test

import (
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/producer"
)

// benchProduce sends 200-byte messages in Sends of batch messages to a real
// broker on this machine (paper §5's producer test).
func benchProduce(b *testing.B, batch int, mod func(*producer.Config)) {
	cfg := brokertest.Config()
	cfg.Log.FlushInterval = 10000
	cfg.Log.FlushIntervalTime = time.Second
	br := brokertest.Start(b, cfg)
	pc := producer.DefaultConfig()
	pc.BrokerList = "0:" + br.Addr
	if mod != nil {
		mod(&pc)
	}
	p, err := producer.New(pc)
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]producer.Message, batch)
	for i := range msgs {
		v := make([]byte, 200)
		for j := range v {
			v[j] = byte('a' + (i+j)%26)
		}
		msgs[i].Value = v
	}
	b.SetBytes(int64(200 * batch))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if pc.Type == producer.Async {
			for i := range msgs {
				if err := p.Send(b.Context(), "perf", msgs[i]); err != nil {
					b.Fatal(err)
				}
			}
		} else if err := p.Send(b.Context(), "perf", msgs...); err != nil {
			b.Fatal(err)
		}
		n += batch
	}
	if err := p.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msg/s")
}

func BenchmarkSyncBatch1(b *testing.B)  { benchProduce(b, 1, nil) }
func BenchmarkSyncBatch50(b *testing.B) { benchProduce(b, 50, nil) }
func BenchmarkSyncBatch50Snappy(b *testing.B) {
	benchProduce(b, 50, func(c *producer.Config) { c.CompressionCodec = wire.CodecSnappy })
}
func BenchmarkAsyncBatch50(b *testing.B) {
	benchProduce(b, 50, func(c *producer.Config) {
		c.Type, c.BatchSize, c.EnqueueTimeout = producer.Async, 50, -1
	})
}

// BenchmarkSyncBatch1NoDelay is BenchmarkSyncBatch1 with TCP_NODELAY
// (Nagle's algorithm off; the default leaves it on, as 0.7).
func BenchmarkSyncBatch1NoDelay(b *testing.B) {
	benchProduce(b, 1, func(c *producer.Config) { c.NoDelay = true })
}

// BenchmarkAsyncBatch1 is the async producer at batch.size 1 (issue 14):
// one MULTIPRODUCE per message, as 0.7, written in runs of one write each.
func BenchmarkAsyncBatch1(b *testing.B) {
	benchProduce(b, 1, func(c *producer.Config) {
		c.Type, c.BatchSize, c.EnqueueTimeout = producer.Async, 1, -1
	})
}

// BenchmarkSyncBatch1ConfirmClose is BenchmarkSyncBatch1 as
// kafka-producer-perf-test runs it: one round trip per connection at close
// instead of one per Send (confirm=close), so each Send is one PRODUCE
// written, as 0.7's SyncProducer.
func BenchmarkSyncBatch1ConfirmClose(b *testing.B) {
	benchProduce(b, 1, func(c *producer.Config) { c.Confirm = producer.ConfirmClose })
}
