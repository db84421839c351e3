package group

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/producer"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"

	"github.com/netdb11/kafka/broker/wire"
)

// testTimeout bounds every wait.
const testTimeout = 60 * time.Second

// testSession is the ZooKeeper session timeout of the consumers under test:
// short, so that a killed consumer's partitions move quickly.
const testSession = 2 * time.Second

func testLogger() *slog.Logger {
	if os.Getenv("GROUP_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// env is a ZooKeeper chroot with brokers registered in it.
type env struct {
	t       testing.TB
	zk      string
	obs     *zkcoord.Conn // an observer session
	mu      sync.Mutex
	brokers map[wire.BrokerID]*brokertest.Broker
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, zk: zktest.Start(t), brokers: make(map[wire.BrokerID]*brokertest.Broker)}
	e.obs = e.dial(nil)
	return e
}

func (e *env) zkConfig() zkcoord.Config {
	return zkcoord.Config{Connect: e.zk, SessionTimeout: testSession, Logger: testLogger()}
}

func (e *env) dial(dialer *zktest.Link) *zkcoord.Conn {
	e.t.Helper()
	cfg := e.zkConfig()
	if dialer != nil {
		cfg.Dial = dialer.Dial
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := zkcoord.Dial(ctx, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

// startBroker starts a broker registered in the env's ZooKeeper, whose new
// topics get partitions partitions.
func (e *env) startBroker(id wire.BrokerID, partitions int) *brokertest.Broker {
	e.t.Helper()
	return e.startBrokerWith(id, partitions, nil)
}

// startBrokerWith is startBroker with mod applied to the broker's config.
func (e *env) startBrokerWith(id wire.BrokerID, partitions int, mod func(*broker.Config)) *brokertest.Broker {
	e.t.Helper()
	cfg := brokertest.Config()
	if mod != nil {
		mod(&cfg)
	}
	cfg.BrokerID = id
	cfg.Log.NumPartitions = partitions
	b, _ := zkbroker.Start(e.t, cfg, e.zkConfig())
	e.mu.Lock()
	e.brokers[id] = b
	e.mu.Unlock()
	return b
}

// stopBroker stops a broker and removes its registration, as a broker
// leaving the cluster.
func (e *env) stopBroker(id wire.BrokerID) {
	e.t.Helper()
	e.mu.Lock()
	b := e.brokers[id]
	delete(e.brokers, id)
	e.mu.Unlock()
	if err := b.Config.Registrar.(*zkcoord.Registrar).Close(); err != nil {
		e.t.Fatal(err)
	}
	if err := b.Stop(); err != nil {
		e.t.Fatal(err)
	}
}

// fixedCluster lists given partitions, for a producer that picks them by key.
type fixedCluster struct {
	parts []wire.BrokerPartition
	addrs map[wire.BrokerID]string
}

func (c *fixedCluster) Partitions(string) []wire.BrokerPartition { return c.parts }
func (c *fixedCluster) BrokerAddr(id wire.BrokerID) (string, bool) {
	a, ok := c.addrs[id]
	return a, ok
}

// produce sends payloads to the topic on broker id's partitions, message i
// to partition i mod partitions, and waits until the topic is registered.
func (e *env) produce(topic string, id wire.BrokerID, partitions int, payloads [][]byte) {
	e.t.Helper()
	e.mu.Lock()
	b := e.brokers[id]
	e.mu.Unlock()
	cl := &fixedCluster{addrs: map[wire.BrokerID]string{id: b.Addr}}
	for p := 0; p < partitions; p++ {
		cl.parts = append(cl.parts, wire.BrokerPartition{Broker: id, Partition: wire.Partition(p)})
	}
	cfg := producer.DefaultConfig()
	cfg.Cluster = cl
	cfg.Partitioner = producer.PartitionerFunc(func(key []byte, n int) int {
		k, _ := strconv.Atoi(string(key))
		return k % n
	})
	p, err := producer.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	defer p.Close()
	const batch = 200
	msgs := make([]producer.Message, 0, batch)
	for i, pl := range payloads {
		msgs = append(msgs, producer.Message{Key: []byte(strconv.Itoa(i)), Value: pl})
		if len(msgs) == batch || i == len(payloads)-1 {
			if err := p.Send(context.Background(), topic, msgs...); err != nil {
				e.t.Fatal(err)
			}
			msgs = msgs[:0]
		}
	}
	e.waitFor(fmt.Sprintf("topic %s registered by broker %d", topic, id), func() bool {
		v, ok, err := e.obs.GetMaybe(zkcoord.TopicBrokerPath(topic, wire.BrokerID(id)))
		return err == nil && ok && string(v) == strconv.Itoa(partitions)
	})
}

func payloads(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "%s-%07d", prefix, i)
	}
	return out
}

// consumerConfig is a group consumer configuration with short timeouts.
func (e *env) consumerConfig(group string) Config {
	cfg := DefaultConfig()
	cfg.GroupID = group
	cfg.ZkConnect = e.zk
	cfg.ZkSessionTimeout = testSession
	cfg.RebalanceBackoff = 200 * time.Millisecond
	cfg.RebalanceRetries = 10
	cfg.FetcherBackoff = 20 * time.Millisecond
	cfg.AutoCommitInterval = 200 * time.Millisecond
	cfg.Logger = testLogger()
	return cfg
}

// start starts a group consumer that the test closes at its end.
func (e *env) start(cfg Config, topics map[string]int) *Consumer {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := New(ctx, cfg, topics)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	wait.Within(e.t, testTimeout, what, cond)
}

// owners reads /consumers/<group>/owners/<topic>: partition -> owner thread.
func (e *env) owners(group, topic string) map[string]string {
	e.t.Helper()
	names, err := e.obs.Children(zkcoord.OwnersPath(group, topic))
	if err != nil {
		e.t.Fatal(err)
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		v, ok, err := e.obs.GetMaybe(zkcoord.OwnersPath(group, topic) + "/" + n)
		if err != nil {
			e.t.Fatal(err)
		}
		if ok {
			out[n] = string(v)
		}
	}
	return out
}

// collector counts the payloads received by readers.
type collector struct {
	mu       sync.Mutex
	counts   map[string]int
	total    int // deliveries
	distinct int // distinct payloads
}

func newCollector() *collector { return &collector{counts: make(map[string]int)} }

func (c *collector) add(p string) {
	c.mu.Lock()
	c.addLocked(p)
	c.mu.Unlock()
}

func (c *collector) addLocked(p string) {
	c.counts[p]++
	c.total++
	if c.counts[p] == 1 {
		c.distinct++
	}
}

// stats reports how many distinct payloads of want arrived, how many are
// missing and how many extra deliveries there were.
func (c *collector) stats(want [][]byte) (distinct, missing, duplicates int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range want {
		if n := c.counts[string(w)]; n > 0 {
			distinct++
			duplicates += n - 1
		} else {
			missing++
		}
	}
	return distinct, missing, duplicates
}

// has reports whether every payload of want arrived. It is cheap while
// fewer distinct payloads than want arrived, so that polling it does not
// hold up the readers.
func (c *collector) has(want [][]byte) bool {
	c.mu.Lock()
	few := c.distinct < len(want)
	c.mu.Unlock()
	if few {
		return false
	}
	_, missing, _ := c.stats(want)
	return missing == 0
}

// read starts a reader goroutine per stream of the consumer, adding every
// payload to col until the consumer closes; the test waits for them.
func read(t *testing.T, c *Consumer, topic string, col *collector) {
	t.Helper()
	readStreams(t, c, c.Streams(topic), func(m Message) { col.add(string(m.Payload)) })
}

// readStreams starts a reader goroutine per stream of streams (of c),
// handing every message to record until c closes; the test closes c when
// it ends and waits for the readers.
func readStreams(t *testing.T, c *Consumer, streams []*Stream, record func(Message)) {
	t.Helper()
	var wg sync.WaitGroup
	for _, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := s.Next(context.Background())
				if err != nil {
					return
				}
				record(m)
			}
		}()
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		wg.Wait()
	})
}
