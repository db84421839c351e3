package producer

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
)

// readPartition reads a partition of a real broker from offset 0 until n
// messages have arrived.
func readPartition(t *testing.T, addr, topic string, partition wire.Partition, n int) []string {
	t.Helper()
	c, err := consumer.NewSimpleConsumer(addr, consumer.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	wait.Within(t, 10*time.Second, "the messages to be fetched", func() bool {
		got = got[:0]
		set, err := c.Fetch(t.Context(), topic, partition, 0, 0)
		if err != nil {
			if strings.Contains(err.Error(), "WrongPartition") || strings.Contains(err.Error(), "connect") {
				return false
			}
			t.Fatal(err)
		}
		it := set.Iterator()
		for it.Next() {
			got = append(got, string(it.Payload()))
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
		return len(got) >= n
	})
	return got
}

func TestEndToEndReconnectAfterBrokerRestart(t *testing.T) {
	b := brokertest.Start(t, brokertest.Config())
	p := newProducer(t, testConfig("0:"+b.Addr))
	if err := p.Send(t.Context(), "t", values("before")...); err != nil {
		t.Fatal(err)
	}
	readPartition(t, b.Addr, "t", 0, 1)
	c := p.conns[0]
	b = b.Restart(t)
	// The watcher sees the old connection close; the next Send reconnects.
	waitDead(t, c, "the old connection to close")
	if err := p.Send(t.Context(), "t", values("after")...); err != nil {
		t.Fatal(err)
	}
	if got := readPartition(t, b.Addr, "t", 0, 2); strings.Join(got, ",") != "before,after" {
		t.Errorf("got %q", got)
	}
}

func TestEndToEndAsyncKeyedPartitions(t *testing.T) {
	cfg := brokertest.Config()
	cfg.Log.NumPartitions = 3
	b := brokertest.Start(t, cfg)
	pc := asyncConfig("")
	pc.Cluster = &fixedCluster{parts: []wire.BrokerPartition{{Broker: 0, Partition: 0}, {Broker: 0, Partition: 1}, {Broker: 0, Partition: 2}}, addrs: map[wire.BrokerID]string{0: b.Addr}}
	pc.BatchSize = 7
	pc.CompressionCodec = wire.CodecGzip
	p := newProducer(t, pc)
	want := map[wire.Partition][]string{}
	for i := range 30 {
		key := []byte(fmt.Sprint("key", i%5))
		v := fmt.Sprint("v", i)
		part := wire.Partition(DefaultPartitioner{}.Partition(key, 3))
		want[part] = append(want[part], v)
		if err := p.Send(t.Context(), "keyed", Message{Key: key, Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for part, vs := range want {
		if got := readPartition(t, b.Addr, "keyed", part, len(vs)); strings.Join(got, ",") != strings.Join(vs, ",") {
			t.Errorf("partition %d: %q, want %q", part, got, vs)
		}
	}
}

// TestEndToEndDialHook: with Config.Dial set, every broker connection is
// opened through it (a fault harness dials from a testbed namespace), and
// a consumer's Config.Dial the same.
func TestEndToEndDialHook(t *testing.T) {
	b := brokertest.Start(t, brokertest.Config())
	var dials atomic.Int32
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	cfg := testConfig("0:" + b.Addr)
	cfg.Dial = dial
	p := newProducer(t, cfg)
	if err := p.Send(t.Context(), "t", values("hooked")...); err != nil {
		t.Fatal(err)
	}
	if dials.Load() != 1 {
		t.Fatalf("producer: %d dials through the hook, want 1", dials.Load())
	}
	ccfg := consumer.DefaultConfig()
	ccfg.Dial = dial
	c, err := consumer.NewSimpleConsumer(b.Addr, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Fetch(t.Context(), "t", 0, 0, 1<<20); err != nil {
		t.Fatal(err)
	}
	if dials.Load() != 2 {
		t.Errorf("consumer: %d dials through the hooks, want 2", dials.Load())
	}
}
