package server

import (
	"fmt"
	"testing"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

// BenchmarkFetch measures one consumer fetching 1 MiB at a time from a
// 64 MiB partition of 200-byte messages, over loopback, for each fetch path
// and socket.send.buffer.
func BenchmarkFetch(b *testing.B) {
	for _, sndbuf := range []int{100 << 10, 0} {
		for _, path := range fetchPaths {
			b.Run(fmt.Sprintf("%s/sndbuf=%dK", path.name, sndbuf>>10), func(b *testing.B) {
				ts := startServer(b, func(c *Config, lc *log.Config) {
					c.UseSendfile = path.useSendfile
					c.SendBuffer = sndbuf
					lc.FlushInterval = 1 << 30
				})
				p := ts.dial(b)
				set := wire.NewMessageSet(payloads(5000, 200, "p")...)
				for range 64 {
					p.send(produceReq("bench", 0, set))
				}
				p.sync()
				if err := ts.logs.FlushAll(); err != nil {
					b.Fatal(err)
				}
				l, err := ts.logs.Get("bench", 0)
				if err != nil {
					b.Fatal(err)
				}
				end := l.EndOffset()
				c := ts.dial(b)
				b.SetBytes(1 << 20)
				b.ResetTimer()
				off := wire.Offset(0)
				for range b.N {
					c.send(fetchReq("bench", 0, off, 1<<20))
					code, body := c.response()
					if code != wire.CodeNone || len(body) == 0 {
						b.Fatalf("code %v, %d bytes at %d", code, len(body), off)
					}
					it := wire.NewIterator(body, off)
					for it.Next() {
					}
					off = it.NextOffset()
					if off >= end {
						off = 0
					}
				}
			})
		}
	}
}

// BenchmarkProduce measures the broker handling pipelined PRODUCE requests
// of 1 and 50 messages of 200 bytes from one connection (Kafka 0.7's
// PRODUCE has no response; a final OFFSETS round trip waits for the last),
// to partition 0 and to partition -1 (the broker picks; what a producer
// with a static broker.list sends).
func BenchmarkProduce(b *testing.B) {
	for _, bc := range []struct{ batch, partition int }{{1, 0}, {1, -1}, {50, 0}} {
		batch := bc.batch
		b.Run(fmt.Sprintf("batch=%d/partition=%d", batch, bc.partition), func(b *testing.B) {
			ts := startServer(b, func(_ *Config, lc *log.Config) { lc.FlushInterval = 500 })
			c := ts.dial(b)
			req := wire.AppendRequest(nil, produceReq("bench", wire.Partition(bc.partition), wire.NewMessageSet(payloads(batch, 200, "p")...)))
			var buf []byte
			for len(buf) < 64<<10 {
				buf = append(buf, req...)
			}
			perWrite := len(buf) / len(req)
			b.SetBytes(int64(len(req)))
			b.ReportMetric(0, "ns/op")
			b.ResetTimer()
			for sent := 0; sent < b.N; sent += perWrite {
				n := min(perWrite, b.N-sent)
				c.write(buf[:n*len(req)])
			}
			c.offsets("bench", 0, wire.LatestTime, 1)
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
