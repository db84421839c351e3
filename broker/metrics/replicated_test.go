package metrics_test

import (
	"testing"

	"github.com/netdb11/kafka/broker/brokertest/replicatest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// TestReplicatedProducesCounted: produces with acks (PRODUCE_ACKS) count in
// messages and bytes in on the broker that appended them for the client,
// both to a partition it leads and to a topic that is not replicated (the
// layer's plain 0.7 append); the follower's copies count nothing.
//
// Before the fix messages_in_total{topic="r"} and {topic="u"} stayed 0 on
// the leader (issue 26, item 3): only the 0.7 PRODUCE path was counted.
func TestReplicatedProducesCounted(t *testing.T) {
	c := replicatest.StartCluster(t, 2, func(cfg *replicatest.Settings) { cfg.MetricsListen = "127.0.0.1:0" })
	c.CreateTopic("r", zkcoord.Assignment{0: {0, 1}})
	st := c.WaitISR("r", 0, 2)
	leader, follower := c.Nodes[st.Leader].B, c.Nodes[1-st.Leader].B
	set := wire.NewMessageSet([]byte("one"), []byte("two"), []byte("three"))
	const sends = 5
	// ZooKeeper names the leader before the leader has its order: the
	// first send is tried until the leader takes it (a refused send
	// appends nothing).
	wait.Within(t, replicatest.Timeout, "the leader to take a produce", func() bool {
		return replicatest.ProduceAcks(leader.Addr, "r", 0, set) == nil
	})
	if err := replicatest.ProduceAcks(leader.Addr, "u", 0, set); err != nil {
		t.Fatal(err)
	}
	for range sends - 1 {
		if err := replicatest.ProduceAcks(leader.Addr, "r", 0, set); err != nil {
			t.Fatal(err)
		}
		if err := replicatest.ProduceAcks(leader.Addr, "u", 0, set); err != nil {
			t.Fatal(err)
		}
	}
	base := "http://" + leader.MetricsAddr().String()
	for _, topic := range []string{"r", "u"} {
		// The answer is written after the request is reported.
		wait.For(t, "the produces to "+topic+" to be counted", func() bool {
			v, _ := value(scrape(t, base), "kafka_server_messages_in_total", "topic", topic)
			return v >= sends*3
		})
		fams := scrape(t, base)
		if got, _ := value(fams, "kafka_server_messages_in_total", "topic", topic); got != sends*3 {
			t.Errorf("leader messages_in_total{topic=%q} = %v, want %d", topic, got, sends*3)
		}
		if got, _ := value(fams, "kafka_server_bytes_in_total", "topic", topic); got != float64(sends*len(set)) {
			t.Errorf("leader bytes_in_total{topic=%q} = %v, want %d", topic, got, sends*len(set))
		}
	}
	// The acks=all answers came after the follower had every message.
	if got, ok := value(scrape(t, "http://"+follower.MetricsAddr().String()), "kafka_server_messages_in_total", "topic", "r"); ok && got != 0 {
		t.Errorf("follower messages_in_total{topic=\"r\"} = %v, want 0 (a replica's copies are not produces)", got)
	}
}
