package log

import (
	"testing"

	"github.com/netdb11/kafka/broker/wire"
)

// benchPayload is the message size of the paper's experiments (§5).
const benchPayload = 200

// BenchmarkAppend1 appends 200-byte messages one per set, with Kafka 0.7's
// default flush policy (an fsync every 500 messages, run by the log's
// flusher), to a log in the system's temporary directory. The final flush is
// timed too, so over a run longer than the page cache absorbs (e.g.
// -benchtime=200000x for BenchmarkAppend50, 2 GB) MB/s is bounded by the
// disk.
func BenchmarkAppend1(b *testing.B) { benchAppend(b, 1) }

// BenchmarkAppend50 is BenchmarkAppend1 with sets of 50 messages, the
// paper's batch size for its producer test.
func BenchmarkAppend50(b *testing.B) { benchAppend(b, 50) }

func benchAppend(b *testing.B, batch int) {
	cfg := DefaultConfig()
	cfg.Dir = b.TempDir()
	m, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := m.Close(); err != nil {
			b.Error(err)
		}
	}()
	l := getLog(b, m, "bench", 0)
	set := messageSet(0, batch, benchPayload)
	b.SetBytes(int64(len(set)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := l.Append(set); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N*batch)/sec, "msg/s")
	b.ReportMetric(float64(b.N)*float64(len(set))/sec/1e6, "MB/s")
}

// BenchmarkReadIterate reads a 20.9 MB log of 200-byte messages in 1 MiB
// regions (as a consumer's fetches) and iterates over each region's
// messages, checking every CRC.
func BenchmarkReadIterate(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Dir = b.TempDir()
	cfg.FlushInterval = 10000
	m, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := m.Close(); err != nil {
			b.Error(err)
		}
	}()
	l := getLog(b, m, "bench", 0)
	set := messageSet(0, 50, benchPayload)
	for range 100000 / 50 {
		mustAppend(b, l, set)
	}
	mustFlush(b, l)

	const fetch = 1 << 20
	buf := make([]byte, 0, fetch)
	var off wire.Offset
	var msgs, bytes int64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r, err := l.Read(off, fetch)
		if err != nil {
			b.Fatal(err)
		}
		buf, err = r.AppendTo(buf[:0])
		r.Release()
		if err != nil {
			b.Fatal(err)
		}
		it := wire.NewIterator(buf, off)
		for it.Next() {
			msgs++
		}
		if err := it.Err(); err != nil {
			b.Fatal(err)
		}
		bytes += int64(it.ValidBytes())
		off += wire.Offset(it.ValidBytes())
		if off == l.EndOffset() {
			off = 0
		}
	}
	b.StopTimer()
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(msgs)/sec, "msg/s")
	b.ReportMetric(float64(bytes)/sec/1e6, "MB/s")
}
