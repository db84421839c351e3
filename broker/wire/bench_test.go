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
