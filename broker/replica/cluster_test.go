package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/controller"
	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/replica/peer"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"
)

// clusterTimeout bounds the waits of the cluster tests: elections wait for
// a ZooKeeper session to expire.
const clusterTimeout = 30 * time.Second

// testSession is the brokers' ZooKeeper session timeout in these tests.
const testSession = 2 * time.Second

// cluster is n real brokers (broker.Broker with the replication layer) on
// 127.0.0.1 and a real ZooKeeper.
type cluster struct {
	t       testing.TB
	connect string
	zk      *zkcoord.Conn
	mod     func(id int, c *broker.Config, rc *Config)
	// passive are brokers started without a controller candidate.
	passive map[BrokerID]bool
	brokers map[BrokerID]*node
	dirs    map[BrokerID]string
}

type node struct {
	b   *brokertest.Broker
	reg *zkcoord.Registrar
	dir string
	// sess is the broker's one ZooKeeper session, shared by its
	// registration, its replication layer and its controller candidate
	// (rule 7), as kafka-server opens it; link carries it: cutting it
	// until the server expires the session kills the broker's presence
	// in ZooKeeper in every role at once.
	sess *zkcoord.Conn
	link *zktest.Link
}

// cutZK cuts the broker off from ZooKeeper (healZK undoes it).
func (nd *node) cutZK() { nd.link.Cut() }

// healZK lets the broker reach ZooKeeper again.
func (nd *node) healZK() { nd.link.Heal() }

func testLog(t testing.TB) *slog.Logger {
	if os.Getenv("REPLICA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func startCluster(t *testing.T, n int, mod func(id int, c *broker.Config, rc *Config)) *cluster {
	t.Helper()
	return startClusterTB(t, n, mod)
}

func startClusterTB(t testing.TB, n int, mod func(id int, c *broker.Config, rc *Config)) *cluster {
	t.Helper()
	return startClusterPassive(t, n, mod)
}

// startClusterPassive is startCluster whose brokers passive run no
// controller candidate: only the others can become controller.
func startClusterPassive(t testing.TB, n int, mod func(id int, c *broker.Config, rc *Config), passive ...BrokerID) *cluster {
	t.Helper()
	connect := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	zk, err := zkcoord.Dial(ctx, zkcoord.Config{Connect: connect, SessionTimeout: 10 * time.Second, Logger: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zk.Close() })
	c := &cluster{t: t, connect: connect, zk: zk, mod: mod, passive: make(map[BrokerID]bool),
		brokers: make(map[BrokerID]*node), dirs: make(map[BrokerID]string)}
	for _, id := range passive {
		c.passive[id] = true
	}
	for i := 0; i < n; i++ {
		c.start(BrokerID(i), t.TempDir())
	}
	return c
}

// start starts broker id with log directory dir.
func (c *cluster) start(id BrokerID, dir string) *node {
	t := c.t
	t.Helper()
	cfg := brokertest.Config()
	cfg.BrokerID = id
	cfg.Log.Dir = dir
	cfg.EnableZookeeper = true
	cfg.ZkConnect = c.connect
	cfg.ZkSessionTimeout = testSession
	cfg.Logger = testLog(t).With("broker", id)
	lc := DefaultConfig()
	lc.LagTime = time.Second
	lc.FetchWait = 100 * time.Millisecond
	lc.Backoff = 20 * time.Millisecond
	lc.CheckpointInterval = 50 * time.Millisecond
	lc.RequestTimeout = 5 * time.Second
	if c.mod != nil {
		c.mod(int(id), &cfg, &lc)
	}
	link := zktest.NewLink()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	sess, err := zkcoord.Dial(ctx, zkcoord.Config{Connect: c.connect, SessionTimeout: cfg.ZkSessionTimeout, Logger: cfg.Logger, Dial: link.Dial})
	if err != nil {
		t.Fatal(err)
	}
	reg := zkcoord.NewSessionRegistrar(sess)
	cfg.Registrar = reg
	bc := cfg
	cfg.Layer = func(logs *log.Manager) (broker.Layer, error) {
		rc := lc
		rc.BrokerID = bc.BrokerID
		rc.Logs = logs
		rc.Session = sess
		rc.Logger = bc.Logger
		ks, err := bc.InterBrokerKeystore()
		if err != nil {
			return nil, err
		}
		rc.TLS = ks
		if !c.passive[id] {
			rc.Candidate = controller.New(controller.Config{BrokerID: rc.BrokerID, UncleanElection: rc.UncleanElection, MinInsyncReplicas: rc.MinInsyncReplicas,
				Backoff: rc.Backoff, RequestTimeout: rc.RequestTimeout, TLS: ks, Logger: rc.Logger})
		}
		return New(rc)
	}
	t.Cleanup(func() { sess.Close() }) // after the broker's own cleanup (LIFO)
	t.Cleanup(func() { reg.Close() })
	nd := &node{b: brokertest.Start(t, cfg), reg: reg, dir: dir, sess: sess, link: link}
	c.brokers[id] = nd
	c.dirs[id] = dir
	return nd
}

// dirOf returns the log directory broker id last ran with.
func (c *cluster) dirOf(id BrokerID) string { return c.dirs[id] }

// stop shuts broker id down cleanly and ends its ZooKeeper sessions, so the
// controller sees it leave.
func (c *cluster) stop(id BrokerID) {
	c.t.Helper()
	nd := c.brokers[id]
	if err := nd.b.Stop(); err != nil {
		c.t.Fatal(err)
	}
	if err := nd.reg.Close(); err != nil {
		c.t.Fatal(err)
	}
	if err := nd.sess.Close(); err != nil {
		c.t.Fatal(err)
	}
	delete(c.brokers, id)
}

// restart starts a stopped broker again on its old log directory.
func (c *cluster) restart(id BrokerID, dir string) { c.t.Helper(); c.start(id, dir) }

// createTopic creates a replicated topic once every running broker is
// registered: the controller gives a new partition its live replicas as
// the ISR, and a broker still registering would be left out of it.
func (c *cluster) createTopic(topic string, a zkcoord.Assignment) {
	c.t.Helper()
	wait.Within(c.t, clusterTimeout, "every broker to be registered", func() bool {
		live, err := zkcoord.RegistryOn(c.zk).Brokers(false)
		if err != nil {
			return false
		}
		for id := range c.brokers {
			if _, ok := live[id]; !ok {
				return false
			}
		}
		return true
	})
	if err := zkcoord.ReplicationOn(c.zk).CreateTopic(topic, a); err != nil {
		c.t.Fatal(err)
	}
}

// state reads a partition's state from ZooKeeper.
func (c *cluster) state(topic string, p wire.Partition) (zkcoord.PartitionState, bool) {
	st, _, ok, err := zkcoord.ReplicationOn(c.zk).PartitionStateOf(topic, p)
	if err != nil {
		c.t.Fatal(err)
	}
	return st, ok
}

// waitLeader waits until the partition has a live leader that has taken
// the role (answers produce) and whose ISR is isrLen long, and returns it.
// The ISR must be isrLen long both in ZooKeeper and in the leader's memory:
// a leader changing its ISR writes ZooKeeper first, so a produce in between
// would still see the old ISR.
func (c *cluster) waitLeader(topic string, p wire.Partition, isrLen int) BrokerID {
	c.t.Helper()
	var leader BrokerID = -1
	wait.Within(c.t, clusterTimeout, fmt.Sprintf("%s-%d to have a leader with an ISR of %d", topic, p, isrLen), func() bool {
		st, ok := c.state(topic, p)
		if !ok || len(st.ISR) != isrLen {
			return false
		}
		nd := c.brokers[st.Leader]
		if nd == nil {
			return false
		}
		l, ok := nd.layerPartition(topic, p)
		if !ok {
			return false
		}
		lead := l.leaderState()
		if lead == nil || lead.Epoch() != st.LeaderEpoch || len(lead.ISR()) != isrLen {
			return false
		}
		leader = st.Leader
		return true
	})
	return leader
}

// interAddr is the broker's inter-broker listener (replica.port), where
// the cluster's own requests go.
func (nd *node) interAddr() string { return nd.b.InterBrokerAddr().String() }

func (nd *node) manager() *Manager {
	return nd.b.Layer().(*Manager)
}

func (nd *node) layerPartition(topic string, p wire.Partition) (*partition, bool) {
	q := nd.manager().partition(topic, p)
	return q, q != nil
}

// request sends one frame to addr and returns the response.
func request(t testing.TB, addr string, frame []byte) (wire.ErrorCode, []byte) {
	t.Helper()
	cl := peer.New(addr, 10*time.Second, nil)
	defer cl.Close()
	code, body, err := cl.RoundTrip(frame, 10*time.Second)
	if err != nil {
		t.Fatalf("request to %s: %v", addr, err)
	}
	return code, append([]byte(nil), body...)
}

func produce(t testing.TB, addr, topic string, p wire.Partition, acks int16, set []byte) wire.ProduceResult {
	t.Helper()
	_, body := request(t, addr, wire.AppendProduceAcksRequest(nil, &wire.ProduceAcksRequest{Acks: acks, TimeoutMs: 5000,
		Parts: []wire.ProduceRequest{{Topic: topic, Partition: p, Messages: set}}}))
	rs, err := wire.DecodeProduceAcksResponse(body)
	if err != nil || len(rs) != 1 {
		t.Fatalf("produce response: %v, %v", rs, err)
	}
	return rs[0]
}

// consume reads a partition from offset 0 with 0.7 FETCHes until an empty
// answer and returns the payloads.
func consume(t testing.TB, addr, topic string, p wire.Partition) []string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var out []string
	var off wire.Offset
	for {
		req := wire.AppendRequest(nil, &wire.Request{Type: wire.RequestFetch, Fetch: []wire.FetchRequest{{Topic: topic, Partition: p, Offset: off, MaxSize: 1 << 20}}})
		if _, err := nc.Write(req); err != nil {
			t.Fatal(err)
		}
		var hdr [6]byte
		if _, err := io.ReadFull(nc, hdr[:]); err != nil {
			t.Fatal(err)
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr[:4])-2)
		if _, err := io.ReadFull(nc, body); err != nil {
			t.Fatal(err)
		}
		if code := wire.ErrorCode(binary.BigEndian.Uint16(hdr[4:])); code != wire.CodeNone {
			t.Fatalf("fetch %s-%d at %d: %v", topic, p, off, code)
		}
		it := wire.NewIterator(body, off)
		n := 0
		for it.Next() {
			out = append(out, string(it.Message().Payload))
			n++
		}
		if n == 0 {
			return out
		}
		off = it.NextOffset()
	}
}

// logBytes reads a replica's log from its files up to end.
func logBytes(t testing.TB, dir, topic string, p wire.Partition, end Offset) []byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, fmt.Sprintf("%s-%d", topic, p), "*.kafka"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	var all []byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	if Offset(len(all)) < end {
		t.Fatalf("replica in %s holds %d bytes, fewer than %d", dir, len(all), end)
	}
	return all[:end]
}

// consumeAll waits until a consumer of the partition reads exactly want
// (messages become visible once flushed, paper §3.1, and below the HW).
func consumeAll(t testing.TB, addr, topic string, p wire.Partition, want []string) {
	t.Helper()
	var got []string
	if !wait.Until(clusterTimeout, func() bool {
		got = consume(t, addr, topic, p)
		return len(got) >= len(want)
	}) || !slices.Equal(got, want) {
		t.Fatalf("consumer of %s-%d on %s read %d messages, want %d", topic, p, addr, len(got), len(want))
	}
}

func msg(i int) []byte { return []byte(fmt.Sprintf("message-%05d", i)) }

// TestReplicatedProduceAndFailover: RF=3, acks=all; every replica holds the
// same bytes up to the HW; the leader stops; a new leader from the ISR
// takes over and nothing acknowledged is lost.
func TestReplicatedProduceAndFailover(t *testing.T) {
	c := startCluster(t, 3, nil)
	c.createTopic("r", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("r", 0, 3)

	var acked []string
	for i := 0; i < 50; i++ {
		set := wire.NewMessageSet(msg(2*i), msg(2*i+1))
		res := produce(t, c.brokers[leader].b.Addr, "r", 0, wire.AcksAll, set)
		if res.Code != wire.CodeNone {
			t.Fatalf("produce %d: %v", i, res.Code)
		}
		acked = append(acked, string(msg(2*i)), string(msg(2*i+1)))
	}
	lp, _ := c.brokers[leader].layerPartition("r", 0)
	hw := lp.highWatermark()
	if want := Offset(len(wire.NewMessageSet(msg(0), msg(1))) * 50); hw != want {
		t.Fatalf("leader HW %d after acks=all, want %d", hw, want)
	}
	// Every replica's bytes up to the HW are the leader's.
	want := logBytes(t, c.brokers[leader].dir, "r", 0, hw)
	for id, nd := range c.brokers {
		if got := logBytes(t, nd.dir, "r", 0, hw); !bytes.Equal(got, want) {
			t.Fatalf("replica %d differs from leader %d below the HW", id, leader)
		}
	}
	consumeAll(t, c.brokers[leader].b.Addr, "r", 0, acked)

	old, _ := c.state("r", 0)
	// The leader refuses a replica fetch inside a message, and one with a
	// stale leader epoch.
	for _, f := range []struct {
		offset Offset
		epoch  int32
		want   wire.ErrorCode
	}{{1, old.LeaderEpoch, wire.CodeNotMessageBoundary}, {0, old.LeaderEpoch - 1, wire.CodeFencedLeaderEpoch},
		{0, old.LeaderEpoch + 1, wire.CodeUnknownLeaderEpoch}, {hw + 1000, old.LeaderEpoch, wire.CodeOffsetOutOfRange}} {
		code, _ := request(t, c.brokers[leader].interAddr(), wire.AppendReplicaFetchRequest(nil, &wire.ReplicaFetchRequest{
			ReplicaID: (leader + 1) % 3, Topic: "r", Partition: 0, LeaderEpoch: f.epoch, Offset: f.offset, MaxSize: 1000}))
		if code != f.want {
			t.Errorf("replica fetch at %d, epoch %d: %v, want %v", f.offset, f.epoch, code, f.want)
		}
	}
	c.stop(leader)
	var next BrokerID
	wait.Within(t, clusterTimeout, "a new leader", func() bool {
		st, ok := c.state("r", 0)
		if !ok || st.Leader == leader || st.LeaderEpoch <= old.LeaderEpoch {
			return false
		}
		next = st.Leader
		return true
	})
	if !slices.Contains(old.ISR, next) {
		t.Fatalf("new leader %d was not in the ISR %v", next, old.ISR)
	}
	next = c.waitLeader("r", 0, 2)
	for i := 100; i < 110; i++ {
		res := produce(t, c.brokers[next].b.Addr, "r", 0, wire.AcksAll, wire.NewMessageSet(msg(i)))
		if res.Code != wire.CodeNone {
			t.Fatalf("produce to the new leader: %v", res.Code)
		}
		acked = append(acked, string(msg(i)))
	}
	consumeAll(t, c.brokers[next].b.Addr, "r", 0, acked)
	// A 0.7 PRODUCE to a follower is refused; to the leader it is accepted.
	for id := range c.brokers {
		if id != next {
			if res := produce(t, c.brokers[id].b.Addr, "r", 0, wire.AcksLeader, wire.NewMessageSet(msg(999))); res.Code != wire.CodeNotLeaderForPartition {
				t.Fatalf("produce to follower %d: %v", id, res.Code)
			}
		}
	}
}
