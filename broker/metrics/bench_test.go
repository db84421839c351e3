package metrics_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/metrics"
	"github.com/netdb11/kafka/broker/server"
	"github.com/netdb11/kafka/broker/wire"
)

// BenchmarkObserver is what the request path pays per request with
// metrics on: the two clock reads of conn.handleFrame and the Observer's
// calls for a PRODUCE of a batch and for a FETCH; serially, and from every
// CPU at once on one topic (the counters' cache lines then move between
// cores).
func BenchmarkObserver(b *testing.B) {
	m := metrics.New()
	produce := func() {
		start := time.Now()
		m.Produced("bench", 0, 50, 10450)
		m.Request(wire.RequestProduce, 1, time.Since(start), nil)
	}
	fetch := func() {
		start := time.Now()
		m.Fetched("bench", 0, 1<<20)
		m.Request(wire.RequestFetch, 1, time.Since(start), nil)
	}
	for _, bc := range []struct {
		name string
		f    func()
	}{{"produce", produce}, {"fetch", fetch}} {
		b.Run(bc.name+"/serial", func(b *testing.B) {
			for range b.N {
				bc.f()
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					bc.f()
				}
			})
		})
	}
}

// benchServer is a server over its own logs on 127.0.0.1:0, with or
// without metrics.
func benchServer(b *testing.B, withMetrics bool) (addr string, logs *log.Manager) {
	b.Helper()
	lc := log.DefaultConfig()
	lc.Dir = b.TempDir()
	lc.FlushInterval = 10000
	sc := server.Config{MaxRequestSize: 100 << 20, UseSendfile: true, ShutdownTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if withMetrics {
		m := metrics.New()
		lc.Observer, sc.Observer = m, m
	}
	logs, err := log.Open(lc)
	if err != nil {
		b.Fatal(err)
	}
	sc.Logs = logs
	srv, err := server.New(sc)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	b.Cleanup(func() {
		cancel()
		if err := errors.Join(<-done, logs.Close()); err != nil {
			b.Error(err)
		}
	})
	return ln.Addr().String(), logs
}

func roundTrip(b *testing.B, c net.Conn, req *wire.Request) []byte {
	if _, err := c.Write(wire.AppendRequest(nil, req)); err != nil {
		b.Fatal(err)
	}
	var hdr [wire.ResponseHeaderLen]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		b.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:])-2)
	if _, err := io.ReadFull(c, body); err != nil {
		b.Fatal(err)
	}
	return body
}

// BenchmarkServer measures a broker's server with metrics off and on:
// pipelined PRODUCE requests of 50 messages of 200 bytes (a final OFFSETS
// round trip waits for the last), and 1 MiB FETCH requests of a 64 MiB
// partition.
func BenchmarkServer(b *testing.B) {
	payloads := make([][]byte, 50)
	for i := range payloads {
		payloads[i] = make([]byte, 200)
	}
	set := wire.NewMessageSet(payloads...)
	offsets := &wire.Request{Type: wire.RequestOffsets, Offsets: &wire.OffsetsRequest{Topic: "bench", Partition: 0, Time: wire.LatestTime, MaxOffsets: 1}}
	for _, mode := range []struct {
		name string
		on   bool
	}{{"metrics=off", false}, {"metrics=on", true}} {
		b.Run("produce50/"+mode.name, func(b *testing.B) {
			addr, _ := benchServer(b, mode.on)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req := wire.AppendRequest(nil, &wire.Request{Type: wire.RequestProduce, Produce: []wire.ProduceRequest{{Topic: "bench", Partition: 0, Messages: set}}})
			var buf []byte
			for len(buf) < 64<<10 {
				buf = append(buf, req...)
			}
			perWrite := len(buf) / len(req)
			b.SetBytes(int64(len(req)))
			b.ResetTimer()
			for sent := 0; sent < b.N; sent += perWrite {
				n := min(perWrite, b.N-sent)
				if _, err := c.Write(buf[:n*len(req)]); err != nil {
					b.Fatal(err)
				}
			}
			roundTrip(b, c, offsets)
			b.ReportMetric(float64(b.N*50)/b.Elapsed().Seconds(), "msgs/s")
		})
		b.Run("fetch1MiB/"+mode.name, func(b *testing.B) {
			addr, logs := benchServer(b, mode.on)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			for range 64 << 20 / len(set) {
				if _, err := c.Write(wire.AppendRequest(nil, &wire.Request{Type: wire.RequestProduce, Produce: []wire.ProduceRequest{{Topic: "bench", Partition: 0, Messages: set}}})); err != nil {
					b.Fatal(err)
				}
			}
			roundTrip(b, c, offsets)
			if err := logs.FlushAll(); err != nil {
				b.Fatal(err)
			}
			l, err := logs.Get("bench", 0)
			if err != nil {
				b.Fatal(err)
			}
			end := l.EndOffset()
			b.SetBytes(1 << 20)
			b.ResetTimer()
			off := wire.Offset(0)
			for range b.N {
				body := roundTrip(b, c, &wire.Request{Type: wire.RequestFetch, Fetch: []wire.FetchRequest{{Topic: "bench", Partition: 0, Offset: off, MaxSize: 1 << 20}}})
				it := wire.NewIterator(body, off)
				for it.Next() {
				}
				if off = it.NextOffset(); off >= end {
					off = 0
				}
			}
		})
	}
}
