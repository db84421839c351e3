package group

import (
	"context"
	"testing"
)

// BenchmarkGroupConsume measures one group consumer with one stream reading
// 200-byte messages from six partitions of one broker (fetch.size 1 MiB),
// rebalance included: b.N messages per run.
func BenchmarkGroupConsume(b *testing.B) {
	e := newEnv(b)
	e.startBroker(0, 6)
	msg := make([]byte, 200)
	msgs := make([][]byte, b.N)
	for i := range msgs {
		msgs[i] = msg
	}
	e.produce("t", 0, 6, msgs)
	b.SetBytes(200)
	b.ResetTimer()
	c := e.start(e.consumerConfig("g"), map[string]int{"t": 1})
	s := c.Streams("t")[0]
	for i := 0; i < b.N; i++ {
		if _, err := s.Next(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
