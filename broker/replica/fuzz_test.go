package replica

import (
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/replica/peer"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// fuzzKinds are the cluster's own requests FuzzOrders sends, chosen by the
// input's kind byte: only these, so that a mutation never turns into a
// client's PRODUCE that makes topics of random names.
var fuzzKinds = [...]wire.RequestType{wire.RequestLeaderAndISR, wire.RequestStopReplica,
	wire.RequestReplicaFetch, wire.RequestOffsetForLeaderEpoch}

// fuzzFrame is the request frame of a fuzz input: the size, the type
// fuzzKinds[kind%4] and body as it is.
func fuzzFrame(kind uint8, body []byte) []byte {
	frame := binary.BigEndian.AppendUint32(nil, uint32(2+len(body)))
	frame = binary.BigEndian.AppendUint16(frame, uint16(fuzzKinds[int(kind)%len(fuzzKinds)]))
	return append(frame, body...)
}

// FuzzOrders sends fuzzed LEADER_AND_ISR, STOP_REPLICA, REPLICA_FETCH and
// OFFSET_FOR_LEADER_EPOCH frames to a live broker's inter-broker listener
// (issue 22), seeded with valid encodings from broker/wire that carry the
// cluster's real controller id and epoch, leader epochs, offsets and topics,
// so that mutations reach the checks of validate.go, not only the decoders.
// After each frame: both brokers still answer METADATA with the partitions'
// leaders and ISRs, and acks=-1 produces; ZooKeeper's controller, controller
// epoch and partition states (their node versions too) did not change; no
// replica was deleted, neither a replicated one nor the 0.7 topic's only
// copy.
//
// The listener is plaintext: whoever reaches it can claim any broker id
// (auth.go), the case in which the checks against ZooKeeper alone must
// hold. With TLS most of these frames would be refused before them.
//
// Without -fuzz it runs the seeds as a test (a few seconds, most of them the
// cluster's start). With -fuzz, each fuzzing process (the coordinator and
// every worker) starts its own cluster in its own ZooKeeper chroot.
func FuzzOrders(f *testing.F) {
	c := startClusterTB(f, 2, func(_ int, _ *broker.Config, rc *Config) {
		// Long enough that a loaded machine (the fuzzer uses every core)
		// does not shrink an ISR, which the checks below would report.
		rc.LagTime = 30 * time.Second
	})
	const topic, plain = "z", "plain"
	c.createTopic(topic, zkcoord.Assignment{0: {0, 1}, 1: {1, 0}})
	leaders := []BrokerID{c.waitLeader(topic, 0, 2), c.waitLeader(topic, 1, 2)}
	// The 0.7 topic: its one copy is on broker 0.
	if r := produce(f, c.brokers[0].b.Addr, plain, 0, wire.AcksLeader, wire.NewMessageSet(msg(0))); r.Code != wire.CodeNone {
		f.Fatalf("produce to the 0.7 topic: %v", r.Code)
	}
	for p, l := range leaders {
		if r := produce(f, c.brokers[l].b.Addr, topic, wire.Partition(p), wire.AcksAll, wire.NewMessageSet(msg(p))); r.Code != wire.CodeNone {
			f.Fatalf("produce to %s-%d: %v", topic, p, r.Code)
		}
	}
	ctrl, ok, err := zkcoord.ElectionOn(c.zk).Controller()
	if err != nil || !ok {
		f.Fatalf("controller: %v, %v", ok, err)
	}
	epoch, err := zkcoord.ElectionOn(c.zk).Epoch()
	if err != nil {
		f.Fatal(err)
	}
	type zkState struct {
		st      zkcoord.PartitionState
		version int32
	}
	var before []zkState
	for p := range leaders {
		st, v, ok, err := zkcoord.ReplicationOn(c.zk).PartitionStateOf(topic, wire.Partition(p))
		if err != nil || !ok {
			f.Fatalf("state of %s-%d: %v, %v", topic, p, ok, err)
		}
		before = append(before, zkState{st, v})
	}

	// Seeds: each kind, valid against the cluster as it is, to each broker.
	endpoints := make([]wire.Broker, 0, 2)
	for id := range BrokerID(2) {
		a := c.brokers[id].b.InterBrokerAddr().(*net.TCPAddr)
		endpoints = append(endpoints, wire.Broker{ID: id, Host: a.IP.String(), Port: a.Port})
	}
	var seeds [][]byte
	for p, s := range before {
		part := wire.Partition(p)
		pl := wire.PartitionLeader{Topic: topic, Partition: part, Leader: s.st.Leader, LeaderEpoch: s.st.LeaderEpoch,
			ISR: s.st.ISR, Replicas: []BrokerID{0, 1}}
		next := pl
		next.LeaderEpoch++
		next.Leader = 1 - pl.Leader
		next.ISR = []BrokerID{next.Leader}
		seeds = append(seeds,
			wire.AppendLeaderAndISRRequest(nil, &wire.LeaderAndISRRequest{ControllerID: ctrl, ControllerEpoch: epoch,
				Partitions: []wire.PartitionLeader{pl}, Leaders: endpoints}),
			wire.AppendLeaderAndISRRequest(nil, &wire.LeaderAndISRRequest{ControllerID: ctrl, ControllerEpoch: epoch,
				Partitions: []wire.PartitionLeader{next}, Leaders: endpoints[next.Leader : next.Leader+1]}),
			wire.AppendStopReplicaRequest(nil, &wire.StopReplicaRequest{ControllerID: ctrl, ControllerEpoch: epoch, Delete: true,
				Partitions: []wire.TopicPartition{{Topic: topic, Partition: part}, {Topic: plain, Partition: 0}}}),
			wire.AppendStopReplicaRequest(nil, &wire.StopReplicaRequest{ControllerID: ctrl, ControllerEpoch: epoch,
				Partitions: []wire.TopicPartition{{Topic: topic, Partition: part}}}),
			wire.AppendReplicaFetchRequest(nil, &wire.ReplicaFetchRequest{ReplicaID: 1 - s.st.Leader, Topic: topic, Partition: part,
				LeaderEpoch: s.st.LeaderEpoch, Offset: 0, MaxSize: 1 << 10}),
			wire.AppendReplicaFetchRequest(nil, &wire.ReplicaFetchRequest{ReplicaID: 7, MaxWaitMs: 100, Topic: topic, Partition: part,
				LeaderEpoch: s.st.LeaderEpoch, Offset: 0, MaxSize: 1 << 10}),
			wire.AppendOffsetForLeaderEpochRequest(nil, &wire.OffsetForLeaderEpochRequest{Topic: topic, Partition: part,
				CurrentLeaderEpoch: s.st.LeaderEpoch, LeaderEpoch: 0}),
		)
	}
	for _, s := range seeds {
		t := wire.RequestType(binary.BigEndian.Uint16(s[4:]))
		kind := uint8(slices.Index(fuzzKinds[:], t))
		for target := range uint8(2) {
			f.Add(target, kind, s[wire.RequestHeaderLen:])
		}
	}

	f.Fuzz(func(t *testing.T, target, kind uint8, body []byte) {
		nd := c.brokers[BrokerID(target%2)]
		// The answer does not matter, only what the broker does: a fetch
		// may wait for data (its MaxWaitMs), which the produces below
		// bring.
		cl := peer.New(nd.interAddr(), 200*time.Millisecond, nil)
		cl.RoundTrip(fuzzFrame(kind, body), 200*time.Millisecond)
		cl.Close()

		now, ok, err := zkcoord.ElectionOn(c.zk).Controller()
		if err != nil || !ok || now != ctrl {
			t.Fatalf("controller %d (registered %v, %v), was %d", now, ok, err, ctrl)
		}
		if e, err := zkcoord.ElectionOn(c.zk).Epoch(); err != nil || e != epoch {
			t.Fatalf("controller epoch %d (%v), was %d", e, err, epoch)
		}
		for p, b := range before {
			st, v, ok, err := zkcoord.ReplicationOn(c.zk).PartitionStateOf(topic, wire.Partition(p))
			if err != nil || !ok || v != b.version || st.Leader != b.st.Leader || st.LeaderEpoch != b.st.LeaderEpoch || !slices.Equal(st.ISR, b.st.ISR) {
				t.Fatalf("%s-%d in ZooKeeper: %+v version %d (%v, %v), was %+v version %d", topic, p, st, v, ok, err, b.st, b.version)
			}
		}
		for id, nd := range c.brokers {
			for p := range before {
				if _, ok := nd.layerPartition(topic, wire.Partition(p)); !ok {
					t.Fatalf("broker %d no longer holds %s-%d", id, topic, p)
				}
				if _, err := os.Stat(filepath.Join(nd.dir, topic+"-"+strconv.Itoa(p))); err != nil {
					t.Fatalf("broker %d's replica of %s-%d: %v", id, topic, p, err)
				}
			}
			checkMetadata(t, id, nd.b.Addr, topic, before[0].st, before[1].st)
		}
		if _, err := os.Stat(filepath.Join(c.brokers[0].dir, plain+"-0")); err != nil {
			t.Fatalf("the 0.7 topic's only copy: %v", err)
		}
		for p, l := range leaders {
			if r := produce(t, c.brokers[l].b.Addr, topic, wire.Partition(p), wire.AcksAll, wire.NewMessageSet(msg(p))); r.Code != wire.CodeNone {
				t.Fatalf("acks=-1 produce to %s-%d on leader %d: %v", topic, p, l, r.Code)
			}
		}
	})
}

// checkMetadata asks broker id (at addr) for topic's METADATA and checks
// that each partition's leader, epoch and ISR are states[p]'s.
func checkMetadata(t *testing.T, id BrokerID, addr, topic string, states ...zkcoord.PartitionState) {
	t.Helper()
	code, body := request(t, addr, wire.AppendMetadataRequest(nil, &wire.MetadataRequest{Topics: []string{topic}}))
	md, err := wire.DecodeMetadataResponse(body)
	if code != wire.CodeNone || err != nil || len(md.Topics) != 1 || len(md.Topics[0].Partitions) != len(states) {
		t.Fatalf("METADATA from broker %d: %v, %+v, %v", id, code, md, err)
	}
	for _, pm := range md.Topics[0].Partitions {
		st := states[pm.Partition]
		if pm.Code != wire.CodeNone || pm.Leader != st.Leader || pm.LeaderEpoch != st.LeaderEpoch || !slices.Equal(pm.ISR, st.ISR) {
			t.Fatalf("METADATA from broker %d: %s-%d %+v, ZooKeeper had %+v", id, topic, pm.Partition, pm, st)
		}
	}
}
