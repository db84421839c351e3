package wire

import "testing"

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
