package group

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/replicatest"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/zkcoord"
)

// BenchmarkReplicatedGroupConsume measures the group consumer on a
// replicated topic as issue 25 item 6 asks: 16 partitions, RF 2, on three
// brokers with the replication layer; one consumer with one stream reads
// b.N 200-byte messages (rebalance included). Besides msgs/s it reports
// the broker connections the consumer opened (conns), the ZooKeeper
// requests it wrote per second while reading (zkreq/s: reads, writes and
// pings of its own session; the brokers' sessions are not counted) and the
// same while idle for idleWindow after the last message (idle-zkreq/s),
// and the broker requests per second while idle (idle-req/s).
//
//	go test -run '^$' -bench ReplicatedGroupConsume -benchtime 32000x ./consumer/group/
func BenchmarkReplicatedGroupConsume(b *testing.B) {
	e := newEnv(b)
	ids := []wire.BrokerID{0, 1, 2}
	for _, id := range ids {
		e.startReplicaBroker(id)
	}
	const parts = 16
	e.createReplicated2("r", parts, ids, 2)
	msg := make([]byte, 200)
	per := (b.N + parts - 1) / parts
	for p := 0; p < parts; p++ {
		n := min(per, b.N-p*per)
		if n <= 0 {
			break
		}
		e.produceBulk("r", wire.Partition(p), msg, n)
	}

	cfg := e.consumerConfig("g")
	def := DefaultConfig() // 0.7's fetcher.backoff.ms and autocommit.interval.ms, not the tests' short ones
	cfg.FetcherBackoff, cfg.AutoCommitInterval = def.FetcherBackoff, def.AutoCommitInterval
	var zkWrites, brokerReqs, conns atomic.Int64
	cfg.ZkDial = func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, writes: &zkWrites}, nil
	}
	cfg.DialBroker = func(addr string) (Broker, error) {
		scfg := consumer.DefaultConfig()
		scfg.FetchSize = cfg.FetchSize
		sc, err := consumer.NewSimpleConsumer(addr, scfg)
		if err != nil {
			return nil, err
		}
		conns.Add(1)
		return reqCounter{Broker: sc, n: &brokerReqs}, nil
	}
	b.SetBytes(200)
	b.ResetTimer()
	zk0 := zkWrites.Load()
	start := time.Now()
	c := e.start(cfg, map[string]int{"r": 1})
	s := c.Streams("r")[0]
	for i := 0; i < b.N; i++ {
		if _, err := s.Next(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	took := time.Since(start)
	zk1, req1 := zkWrites.Load(), brokerReqs.Load()
	idle := time.NewTimer(idleWindow)
	<-idle.C
	b.ReportMetric(float64(b.N)/took.Seconds(), "msgs/s")
	b.ReportMetric(float64(conns.Load()), "conns")
	b.ReportMetric(float64(zk1-zk0)/took.Seconds(), "zkreq/s")
	b.ReportMetric(float64(zkWrites.Load()-zk1)/idleWindow.Seconds(), "idle-zkreq/s")
	b.ReportMetric(float64(brokerReqs.Load()-req1)/idleWindow.Seconds(), "idle-req/s")
}

// reqCounter counts the requests made through it.
type reqCounter struct {
	Broker
	n *atomic.Int64
}

func (b reqCounter) MultiFetch(ctx context.Context, reqs ...consumer.FetchRequest) ([]consumer.MessageSet, error) {
	b.n.Add(1)
	return b.Broker.MultiFetch(ctx, reqs...)
}

func (b reqCounter) OffsetsBefore(ctx context.Context, topic string, partition wire.Partition, t int64, maxNum int) ([]wire.Offset, error) {
	b.n.Add(1)
	return b.Broker.OffsetsBefore(ctx, topic, partition, t, maxNum)
}

func (b reqCounter) Metadata(ctx context.Context, topics ...string) (*wire.MetadataResponse, error) {
	b.n.Add(1)
	return b.Broker.Metadata(ctx, topics...)
}

// idleWindow is how long BenchmarkReplicatedGroupConsume counts requests
// after the last message: longer than the leader recheck of idle
// partitions.
const idleWindow = 10 * time.Second

// countingConn counts the writes on a ZooKeeper connection (one per
// request or ping).
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// createReplicated2 is createReplicated with rf replicas per partition,
// spread round robin over brokers.
func (e *env) createReplicated2(topic string, partitions int, brokers []wire.BrokerID, rf int) {
	e.t.Helper()
	a := zkcoord.Assignment{}
	for p := 0; p < partitions; p++ {
		for i := 0; i < rf; i++ {
			a[wire.Partition(p)] = append(a[wire.Partition(p)], brokers[(p+i)%len(brokers)])
		}
	}
	if err := zkcoord.ReplicationOn(e.obs).CreateTopic(topic, a); err != nil {
		e.t.Fatal(err)
	}
	for p := 0; p < partitions; p++ {
		e.waitFor(fmt.Sprintf("%s-%d led with a full ISR", topic, p), func() bool {
			_, st, err := zkcoord.GroupsOn(e.obs).PartitionLeader(topic, wire.Partition(p))
			return err == nil && len(st.ISR) == rf
		})
	}
}

// produceBulk writes n copies of msg to a replicated partition's leader
// with acks=all, 1000 to a request.
func (e *env) produceBulk(topic string, p wire.Partition, msg []byte, n int) {
	e.t.Helper()
	const batch = 1000
	var once sync.Once
	for i := 0; i < n; i += batch {
		ms := make([][]byte, min(batch, n-i))
		for j := range ms {
			ms[j] = msg
		}
		set := wire.NewMessageSet(ms...)
		e.waitFor(fmt.Sprintf("batch %d of %s-%d acknowledged", i/batch, topic, p), func() bool {
			info, _, err := zkcoord.GroupsOn(e.obs).PartitionLeader(topic, p)
			if err == nil {
				err = replicatest.ProduceAcks(info.Addr(), topic, p, set)
			}
			if err != nil {
				once.Do(func() { e.t.Logf("produce to %s-%d: %v (retrying)", topic, p, err) })
			}
			return err == nil
		})
	}
}
