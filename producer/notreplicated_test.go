package producer

import (
	"slices"
	"sync"
	"testing"

	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// TestNotReplicatedSaidOnce: with request.required.acks 1 or -1, a send to
// a topic with no 0.8 assignment (a 0.7 topic, here on a broker with the
// replication layer) calls Config.OnNotReplicated once for the topic,
// however many sends follow, sync and async; a replicated topic never does.
// The messages still arrive, acknowledged by the one broker.
//
// Before (issue 26, item 2), nothing told the user: the README's
// acks=-1 example to an uncreated topic wrote one copy and exited 0.
func TestNotReplicatedSaidOnce(t *testing.T) {
	c := startReplicated(t, 1, nil)
	c.CreateTopic("r", zkcoord.Assignment{0: {0}})
	c.WaitISR("r", 0, 1)
	addr := c.Nodes[0].B.Addr

	for _, tc := range []struct {
		name string
		acks int16
		typ  Type
	}{{"sync acks=-1", wire.AcksAll, Sync}, {"async acks=1", wire.AcksLeader, Async}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var told []string
			cfg := acksConfig(c.BrokerList(), tc.acks)
			cfg.Type = tc.typ
			cfg.OnNotReplicated = func(topic string) {
				mu.Lock()
				told = append(told, topic)
				mu.Unlock()
			}
			p := newProducer(t, cfg)
			for range 3 {
				for _, topic := range []string{"r3", "r"} {
					if err := p.Send(t.Context(), topic, values("a", "b")...); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(told, []string{"r3"}) {
				t.Fatalf("OnNotReplicated called for %q, want once for r3", told)
			}
		})
	}
	wait.Within(t, clusterTimeout, "the 12 messages to r3 to be readable", func() bool {
		return len(readPlain(t, addr, "r3")) == 12
	})
}
