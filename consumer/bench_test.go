package consumer_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/producer"

	"github.com/netdb11/kafka/broker/wire"
)

// BenchmarkFetch1MiB consumes 200-byte messages with 1 MiB fetches from a
// real broker on this machine (the paper's §5 consumer test, with larger
// fetches): each op is one message.
func BenchmarkFetch1MiB(b *testing.B) { benchConsume(b, wire.CodecNone) }

// BenchmarkFetch1MiBGzip and BenchmarkFetch1MiBSnappy consume log-like
// 200-byte messages produced in compressed batches of 50 (compression.codec
// 1 and 2): each op is one inner message, expanded and CRC-checked (the
// wrapper's CRC, gzip's own CRC-32 for gzip, and every inner message's CRC).
func BenchmarkFetch1MiBGzip(b *testing.B)   { benchConsume(b, wire.CodecGzip) }
func BenchmarkFetch1MiBSnappy(b *testing.B) { benchConsume(b, wire.CodecSnappy) }

// logLines returns n activity-log-like lines of size bytes (timestamps,
// hosts, pages and ids that repeat as in the paper's logs, §1), so that
// the codecs compress them as they would real logs.
func logLines(n, size int) [][]byte {
	pages := []string{"/home", "/feed", "/profile/view", "/search", "/jobs/view", "/messages/inbox"}
	events := []string{"PageViewEvent", "SearchEvent", "AdImpressionEvent", "ProfileViewEvent"}
	hosts := []string{"fe01.prod", "fe02.prod", "fe03.prod", "app11.prod"}
	r := rand.New(rand.NewPCG(2011, 6))
	out := make([][]byte, n)
	for i := range out {
		s := fmt.Sprintf("2011-06-12T10:%02d:%02d.%03dZ %s INFO %s member=%d page=%s ip=10.%d.%d.%d session=%016x latency_ms=%d",
			i/60000%60, i/1000%60, i%1000, hosts[r.IntN(len(hosts))], events[r.IntN(len(events))], r.IntN(100_000_000),
			pages[r.IntN(len(pages))], r.IntN(256), r.IntN(256), r.IntN(256), r.Uint64(), r.IntN(500))
		line := []byte(strings.Repeat(" ", size))
		copy(line, s)
		out[i] = line
	}
	return out
}

func benchConsume(b *testing.B, codec wire.Codec) {
	cfg := brokertest.Config()
	cfg.Log.FlushInterval = 10000
	cfg.Log.FlushIntervalTime = 100 * time.Millisecond
	br := brokertest.Start(b, cfg)
	pc := producer.DefaultConfig()
	pc.BrokerList = "0:" + br.Addr
	pc.CompressionCodec = codec
	p, err := producer.New(pc)
	if err != nil {
		b.Fatal(err)
	}
	const total = 200_000
	lines := logLines(5000, 200)
	msgs := make([]producer.Message, 50)
	payloads := make([][]byte, len(msgs))
	var end wire.Offset // where the log ends once every batch is in: the same encoder's sizes
	for k := range total / len(msgs) {
		for i := range msgs {
			msgs[i].Value = lines[(k*len(msgs)+i)%len(lines)]
			payloads[i] = msgs[i].Value
		}
		if err := p.Send(b.Context(), "perf", msgs...); err != nil {
			b.Fatal(err)
		}
		enc, err := wire.AppendCompressed(nil, codec, wire.NewMessageSet(payloads...))
		if err != nil {
			b.Fatal(err)
		}
		end += wire.Offset(len(enc))
	}
	if err := p.Close(); err != nil {
		b.Fatal(err)
	}
	c, err := consumer.NewSimpleConsumer(br.Addr, consumer.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	// The producer's Close proved delivery; the log end becomes visible
	// at the next flush.
	wait.Within(b, 10*time.Second, "the log end to pass every message", func() bool {
		offs, err := c.OffsetsBefore(b.Context(), "perf", 0, -1, 1)
		if err != nil {
			b.Fatal(err)
		}
		return offs[0] >= end
	})
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
