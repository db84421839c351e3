package replica

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/wire"
)

// TestPlainTopicProduceDoesNotWaitOnZooKeeper: a 0.7 PRODUCE to a topic this
// broker keeps as a plain log is handled while ZooKeeper does not answer: the
// 2011 broker serves producers whatever ZooKeeper does (paper §3.3), and the
// replication layer beside it must not make it wait.
//
// Found by the full matrix's zk-kill-majority x none (4 December: 23,190
// nonmonotonic-send in 9 of 10 trials): with the ensemble's majority killed,
// the layer's once-a-second lookup of whether the topic is replicated hung
// on the surviving server, the broker stopped reading the producer's
// connection, the producer's write timed out and it reconnected. Before the
// fix, with the lookup held and the cache a second old, the PRODUCE was not
// handled until ZooKeeper answered.
func TestPlainTopicProduceDoesNotWaitOnZooKeeper(t *testing.T) {
	var skew atomic.Int64
	c := startCluster(t, 1, func(id int, cfg *broker.Config, rc *Config) {
		rc.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	addr := c.brokers[0].b.Addr
	// produce sends a 0.7 PRODUCE and then OFFSETS on one connection (a
	// broker handles one connection's requests in order: the answer means
	// the PRODUCE was handled) and returns the partition's written end.
	produce := func(payload string, within time.Duration) (wire.Offset, error) {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		frame := wire.AppendRequest(nil, &wire.Request{Type: wire.RequestProduce,
			Produce: []wire.ProduceRequest{{Topic: "plain", Partition: 0, Messages: wire.NewMessageSet([]byte(payload))}}})
		frame = wire.AppendRequest(frame, &wire.Request{Type: wire.RequestOffsets,
			Offsets: &wire.OffsetsRequest{Topic: "plain", Partition: 0, Time: wire.LatestTime, MaxOffsets: 1}})
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		nc.SetReadDeadline(time.Now().Add(within))
		var rr wire.ResponseReader
		code, body, err := rr.ReadResponse(nc, 1<<10)
		if err != nil {
			return 0, err
		}
		if offs, err := wire.DecodeOffsetsResponse(body); code != wire.CodeNone || err != nil || len(offs) != 1 {
			t.Fatalf("OFFSETS: %v %v %v", code, offs, err)
		}
		l, err := c.brokers[0].manager().cfg.Logs.Get("plain", 0)
		if err != nil {
			t.Fatal(err)
		}
		return l.WrittenEnd(), nil
	}
	first, err := produce("before", clusterTimeout)
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	hook := func(string) { <-hold }
	assignmentHook.Store(&hook)
	t.Cleanup(func() {
		assignmentHook.Store(nil)
		close(hold)
	})
	skew.Store(int64(10 * plainTopicRefresh)) // the layer's answer is old
	second, err := produce("while ZooKeeper does not answer", 10*time.Second)
	if err != nil {
		t.Fatalf("a PRODUCE to a plain topic waited on ZooKeeper: %v", err)
	}
	if second <= first {
		t.Fatalf("the log ends at %d after the second PRODUCE, %d after the first", second, first)
	}
}
