package producer

import (
	"fmt"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/replicatest"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// BenchmarkSyncBatch50Acks sends 200-byte messages in sync Sends of 50,
// one goroutine, to brokers with the replication layer in this process: a
// 0.7 topic with acks=0 and confirm=send (PRODUCE and the OFFSETS round
// trip), and replicated topics with RF 1 and 3 at acks 1 and -1 (one
// PRODUCE_ACKS round trip per Send). All share the machine's cores, so
// compare ratios within one run.
func BenchmarkSyncBatch50Acks(b *testing.B) {
	c := startReplicated(b, 3, func(cfg *replicatest.Settings) {
		cfg.Log.FlushInterval = 10000
		cfg.Log.FlushIntervalTime = time.Second
		cfg.Replica.LagTime = 10 * time.Second
	})
	c.CreateTopic("rf1", zkcoord.Assignment{0: {0}})
	c.CreateTopic("rf3", zkcoord.Assignment{0: {0, 1, 2}})
	c.WaitISR("rf1", 0, 1)
	c.WaitISR("rf3", 0, 3)
	msgs := make([]Message, 50)
	for i := range msgs {
		v := make([]byte, 200)
		for j := range v {
			v[j] = byte('a' + (i+j)%26)
		}
		msgs[i].Value = v
	}
	for _, bc := range []struct {
		topic string
		acks  int16
	}{{"plain", wire.AcksNone}, {"rf1", wire.AcksLeader}, {"rf1", wire.AcksAll}, {"rf3", wire.AcksLeader}, {"rf3", wire.AcksAll}} {
		b.Run(fmt.Sprintf("%s/acks=%d", bc.topic, bc.acks), func(b *testing.B) {
			cfg := acksConfig("0:"+c.Nodes[0].B.Addr, bc.acks)
			cfg.Confirm = ""
			p, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			b.SetBytes(200 * 50)
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Send(b.Context(), bc.topic, msgs...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
