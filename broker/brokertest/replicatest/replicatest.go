// Package replicatest starts real brokers with the replication layer
// (broker/replica) on a real ZooKeeper for tests, as brokertest starts the
// 2011 broker: in the test's process, on 127.0.0.1, each with a ZooKeeper
// registration that ends when the test ends.
//
//	c := replicatest.StartCluster(t, 3, nil)
//	c.CreateTopic("r", zkcoord.Assignment{0: {0, 1, 2}})
//	st := c.WaitISR("r", 0, 3)
//	addr := c.Nodes[st.Leader].B.Addr
//
// It is a package of its own, not part of brokertest, because
// broker/replica's own tests use brokertest: brokertest importing
// broker/replica would be an import cycle. Only test files import it, so
// producer/ and consumer/ packages keep off broker/replica.
package replicatest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/controller"
	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/replica"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"
)

// Timeout bounds the waits on a replicated cluster (elections).
const Timeout = 30 * time.Second

// RequestTimeout is the layer's controller.socket.timeout.ms in tests.
const RequestTimeout = 5 * time.Second

// Settings is one replicated broker's configuration, as kafka-server
// loads it: the 2011 broker's (broker.Keys; its fields are promoted, so
// s.MetricsListen is the broker's metrics.listen) and the replication
// layer's (replica.Keys: s.Replica.MinInsyncReplicas is
// min.insync.replicas). A client's test sets the layer's keys through it
// without importing broker/replica.
type Settings struct {
	broker.Config
	// Replica is the layer's keys; Layer fills in the rest (broker id,
	// logs, session, keystore, controller candidate).
	Replica replica.Config
}

// Tune sets cfg's ZooKeeper session to the short one tests use
// (zk.sessiontimeout.ms=2000), so that failures are noticed in a
// fraction of the default time.
func Tune(cfg *broker.Config) {
	cfg.ZkSessionTimeout = 2 * time.Second
}

// LayerConfig returns replica.DefaultConfig with the short replication
// timings tests use, so that followers catch up in a fraction of a
// second: replica.lag.time.max.ms=1000, replica.fetch.wait.max.ms=100,
// replica.fetch.backoff.ms=20,
// replica.high.watermark.checkpoint.interval.ms=50; and RequestTimeout.
func LayerConfig() replica.Config {
	rc := replica.DefaultConfig()
	rc.LagTime = time.Second
	rc.FetchWait = 100 * time.Millisecond
	rc.Backoff = 20 * time.Millisecond
	rc.CheckpointInterval = 50 * time.Millisecond
	rc.RequestTimeout = RequestTimeout
	return rc
}

// Config returns brokertest.Config for broker id with ZooKeeper at
// connect and the timings of Tune, and LayerConfig for its layer.
func Config(id wire.BrokerID, connect string) Settings {
	cfg := brokertest.Config()
	cfg.BrokerID = id
	cfg.EnableZookeeper = true
	cfg.ZkConnect = connect
	Tune(&cfg)
	return Settings{Config: cfg, Replica: LayerConfig()}
}

// Layer returns, for broker.Config.Layer, the replication layer of
// LayerConfig for the broker of cfg (brokerid, zk.connect,
// zk.sessiontimeout.ms, its keystore), with cfg.Logger (if set) for the
// layer and its ZooKeeper session.
func Layer(cfg broker.Config) func(*log.Manager) (broker.Layer, error) {
	return Settings{Config: cfg, Replica: LayerConfig()}.Layer()
}

// Layer returns, for broker.Config.Layer, the replication layer
// configured from s.Replica as kafka-server configures it, with what it
// takes from the broker's keys (brokerid, zk.connect,
// zk.sessiontimeout.ms, max.message.size, the inter-broker keystore) and
// s.Logger (if set) for the layer and its ZooKeeper session.
func (s Settings) Layer() func(*log.Manager) (broker.Layer, error) {
	cfg := s.Config
	return func(logs *log.Manager) (broker.Layer, error) {
		rc := s.Replica
		rc.BrokerID = cfg.BrokerID
		rc.Logs = logs
		rc.ZK = zkcoord.Config{Connect: cfg.ZkConnect, SessionTimeout: cfg.ZkSessionTimeout, Logger: cfg.Logger}
		rc.MaxMessageSize = cfg.Log.MaxMessageSize
		if cfg.Logger != nil {
			rc.Logger = cfg.Logger
		}
		ks, err := cfg.InterBrokerKeystore()
		if err != nil {
			return nil, err
		}
		rc.TLS = ks
		rc.Candidate = controller.New(controller.Config{BrokerID: rc.BrokerID, UncleanElection: rc.UncleanElection, MinInsyncReplicas: rc.MinInsyncReplicas,
			Backoff: rc.Backoff, RequestTimeout: rc.RequestTimeout, TLS: ks, Logger: rc.Logger})
		return replica.New(rc)
	}
}

// Start starts a broker with s.Config (ZooKeeper at s.ZkConnect) and the
// replication layer of s.Layer, registered in ZooKeeper by the
// returned Registrar, which is closed when the test ends (closing it
// sooner ends the registration, as a broker leaving the cluster).
func Start(t testing.TB, s Settings) (*brokertest.Broker, *zkcoord.Registrar) {
	t.Helper()
	cfg := s.Config
	cfg.EnableZookeeper = true
	reg := zkcoord.NewRegistrar(zkcoord.Config{Connect: cfg.ZkConnect, SessionTimeout: cfg.ZkSessionTimeout, Logger: cfg.Logger})
	t.Cleanup(func() { reg.Close() })
	cfg.Registrar = reg
	s.Config = cfg
	cfg.Layer = s.Layer()
	return brokertest.Start(t, cfg), reg
}

// Cluster is brokers with the replication layer on a real ZooKeeper,
// started by StartCluster.
type Cluster struct {
	T testing.TB
	// Connect is the ZooKeeper connect string.
	Connect string
	// ZK is a ZooKeeper session for the test's own reads and writes.
	ZK *zkcoord.Conn
	// Mod, if set, changes each broker's configuration (the broker's
	// and its layer's) before it starts.
	Mod func(s *Settings)
	// Nodes are the running brokers by id.
	Nodes map[wire.BrokerID]*Node
}

// Node is a running broker of a Cluster and its registration.
type Node struct {
	B   *brokertest.Broker
	Reg *zkcoord.Registrar
}

// discard is the default logger of a Cluster's brokers and session.
func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// StartCluster starts a ZooKeeper (zktest.Start) and brokers 0..n-1 on
// it, each with Config(id, connect), a logger that discards, and then mod.
func StartCluster(t testing.TB, n int, mod func(s *Settings)) *Cluster {
	t.Helper()
	connect := zktest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	defer cancel()
	zk, err := zkcoord.Dial(ctx, zkcoord.Config{Connect: connect, SessionTimeout: 10 * time.Second, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zk.Close() })
	c := &Cluster{T: t, Connect: connect, ZK: zk, Mod: mod, Nodes: map[wire.BrokerID]*Node{}}
	for id := range n {
		c.Start(wire.BrokerID(id))
	}
	return c
}

// Start starts broker id in a fresh log directory.
func (c *Cluster) Start(id wire.BrokerID) {
	t := c.T
	t.Helper()
	cfg := Config(id, c.Connect)
	cfg.Log.Dir = t.TempDir()
	cfg.Logger = discard().With("broker", id)
	if c.Mod != nil {
		c.Mod(&cfg)
	}
	b, reg := Start(t, cfg)
	c.Nodes[id] = &Node{B: b, Reg: reg}
}

// Stop shuts a broker down cleanly and ends its registration, so that the
// controller sees it leave.
func (c *Cluster) Stop(id wire.BrokerID) {
	c.T.Helper()
	nd := c.Nodes[id]
	if err := nd.B.Stop(); err != nil {
		c.T.Fatal(err)
	}
	if err := nd.Reg.Close(); err != nil {
		c.T.Fatal(err)
	}
	delete(c.Nodes, id)
}

// BrokerList is broker.list ("id:host:port,...") of the running brokers.
func (c *Cluster) BrokerList() string {
	var ids []wire.BrokerID
	for id := range c.Nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf("%d:%s", id, c.Nodes[id].B.Addr))
	}
	return strings.Join(parts, ",")
}

// CreateTopic creates topic with assignment a in ZooKeeper.
func (c *Cluster) CreateTopic(topic string, a zkcoord.Assignment) {
	c.T.Helper()
	if err := zkcoord.ReplicationOn(c.ZK).CreateTopic(topic, a); err != nil {
		c.T.Fatal(err)
	}
}

// WaitISR waits until the partition has a running leader and an ISR of
// isrLen, and returns its state.
func (c *Cluster) WaitISR(topic string, p wire.Partition, isrLen int) zkcoord.PartitionState {
	c.T.Helper()
	var st zkcoord.PartitionState
	wait.Within(c.T, Timeout, fmt.Sprintf("%s-%d to have a live leader and an ISR of %d", topic, p, isrLen), func() bool {
		s, _, ok, err := zkcoord.ReplicationOn(c.ZK).PartitionStateOf(topic, p)
		if err != nil {
			c.T.Fatal(err)
		}
		st = s
		if !ok || len(s.ISR) != isrLen || c.Nodes[s.Leader] == nil {
			return false
		}
		// The leader's own view too: the controller writes a shrunk ISR to
		// ZooKeeper before its order reaches the leader, and a produce in
		// between would still see the old ISR.
		m, isManager := c.Nodes[s.Leader].B.Layer().(*replica.Manager)
		if !isManager {
			return true
		}
		pi, ok := m.ReplicaInfo(topic, p)
		return ok && pi.Role == "leader" && pi.LeaderEpoch == s.LeaderEpoch && len(pi.ISR) == isrLen
	})
	return st
}

// maxProduceAcksResponse bounds the answer to ProduceAcks's request (one
// partition's result: a few dozen bytes).
const maxProduceAcksResponse = 64 << 10

// ProduceAcks sends one PRODUCE_ACKS with acks=all of set to partition p
// of topic on the broker at addr and reads its answer: nil once every
// replica in the ISR has the messages, else the request's or the
// partition's error (a test retries it, e.g. on the new leader).
func ProduceAcks(addr, topic string, p wire.Partition, set []byte) error {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	frame := wire.AppendProduceAcksRequest(nil, &wire.ProduceAcksRequest{Acks: wire.AcksAll, TimeoutMs: 5000,
		Parts: []wire.ProduceRequest{{Topic: topic, Partition: p, Messages: set}}})
	var rr wire.ResponseReader
	code, body, err := rr.RoundTrip(nc, frame, time.Now().Add(10*time.Second), maxProduceAcksResponse)
	if err != nil {
		return err
	}
	if code != wire.CodeNone {
		return code.Err()
	}
	rs, err := wire.DecodeProduceAcksResponse(body)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Code != wire.CodeNone {
			return r.Code.Err()
		}
	}
	return nil
}
