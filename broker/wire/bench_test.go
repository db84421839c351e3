package wire

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func BenchmarkIterate200(b *testing.B) {
	p := make([]byte, 200)
	var set []byte
	for range 5000 {
		set = AppendMessage(set, p)
	}
	b.SetBytes(int64(len(set)))
	b.ResetTimer()
	for b.Loop() {
		it := NewIterator(set, 0)
		for it.Next() {
		}
	}
	b.ReportMetric(float64(5000*b.N)/b.Elapsed().Seconds(), "msg/s")
}

func benchCompress(b *testing.B, codec Codec) {
	payloads := make([][]byte, 50)
	for i := range payloads {
		payloads[i] = make([]byte, 200)
		for j := range payloads[i] {
			payloads[i][j] = byte('a' + (i+j)%26)
		}
	}
	inner := NewMessageSet(payloads...)
	b.SetBytes(int64(len(inner)))
	b.ReportAllocs()
	var dst []byte
	for b.Loop() {
		var err error
		if dst, err = AppendCompressed(dst[:0], codec, inner); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendCompressedGzip50(b *testing.B)   { benchCompress(b, CodecGzip) }
func BenchmarkAppendCompressedSnappy50(b *testing.B) { benchCompress(b, CodecSnappy) }

// benchLogLines returns n activity-log-like lines of size bytes: timestamps,
// hosts, pages and ids that repeat as in the paper's logs (§1), so that a
// codec compresses them as it would real logs (random bytes would not
// compress at all).
func benchLogLines(n, size int) [][]byte {
	pages := []string{"/home", "/feed", "/profile/view", "/search", "/jobs/view", "/messages/inbox"}
	events := []string{"PageViewEvent", "SearchEvent", "AdImpressionEvent", "ProfileViewEvent"}
	hosts := []string{"fe01.prod", "fe02.prod", "fe03.prod", "app11.prod"}
	r := rand.New(rand.NewPCG(2011, 6))
	out := make([][]byte, n)
	for i := range out {
		s := fmt.Sprintf("2011-06-12T10:%02d:%02d.%03dZ %s INFO %s member=%d page=%s ip=10.%d.%d.%d session=%016x latency_ms=%d",
			i/60000%60, i/1000%60, i%1000, hosts[r.IntN(len(hosts))], events[r.IntN(len(events))], r.IntN(100_000_000),
			pages[r.IntN(len(pages))], r.IntN(256), r.IntN(256), r.IntN(256), r.Uint64(), r.IntN(500))
		line := make([]byte, size)
		copy(line, s)
		for j := min(len(s), size); j < size; j++ {
			line[j] = ' '
		}
		out[i] = line
	}
	return out
}

// benchDeep iterates, with a DeepIterator, a fetch of 1 MiB of compressed
// batches of 50 log-like 200-byte messages (the paper's consumer figure with
// compression.codec set): each op is one inner message, decompressed and
// CRC-checked.
func benchDeep(b *testing.B, codec Codec) {
	lines := benchLogLines(5000, 200)
	var set []byte
	for len(set) < 1<<20 {
		for i := 0; i < len(lines) && len(set) < 1<<20; i += 50 {
			var err error
			if set, err = AppendCompressed(set, codec, NewMessageSet(lines[i:i+50]...)); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.SetBytes(200)
	b.ReportAllocs()
	n := 0
	var it DeepIterator
	var buf []byte
	it.SetAlloc(func(n int) []byte {
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		return buf[:0]
	})
	for n < b.N {
		it.Reset(set, 0)
		for n < b.N && it.Next() {
			n++
		}
		if err := it.Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msg/s")
}

func BenchmarkDeepIterateGzip50(b *testing.B)   { benchDeep(b, CodecGzip) }
func BenchmarkDeepIterateSnappy50(b *testing.B) { benchDeep(b, CodecSnappy) }
func BenchmarkDeepIterateNone(b *testing.B)     { benchDeep(b, CodecNone) }
