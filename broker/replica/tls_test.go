package replica

import (
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/clustertls"
	"github.com/netdb11/kafka/broker/replica/peer"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// clusterCerts is a cluster CA and keystore files made in a test's
// temporary directory, as kafka-certs makes them.
type clusterCerts struct {
	t     testing.TB
	dir   string
	ca    *clustertls.CA
	trust string // the truststore file
}

func newClusterCerts(t testing.TB) *clusterCerts {
	t.Helper()
	ca, err := clustertls.NewCA("test cluster CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cc := &clusterCerts{t: t, dir: t.TempDir(), ca: ca}
	cc.trust = filepath.Join(cc.dir, "ca.pem")
	if err := os.WriteFile(cc.trust, ca.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	return cc
}

// keystore writes broker id's keystore file and returns its path.
func (cc *clusterCerts) keystore(id BrokerID) string {
	cc.t.Helper()
	ks, err := cc.ca.Issue(id, time.Hour)
	if err != nil {
		cc.t.Fatal(err)
	}
	path := filepath.Join(cc.dir, fmt.Sprintf("broker-%d.pem", id))
	if err := os.WriteFile(path, ks, 0o600); err != nil {
		cc.t.Fatal(err)
	}
	return path
}

// load returns broker id's keystore, loaded.
func (cc *clusterCerts) load(id BrokerID) *clustertls.Keystore {
	cc.t.Helper()
	k, err := clustertls.Load(cc.keystore(id), cc.trust)
	if err != nil {
		cc.t.Fatal(err)
	}
	return k
}

// mod sets a broker's configuration to mutual TLS between brokers.
func (cc *clusterCerts) mod(id int, c *broker.Config, _ *Config) {
	c.SSLKeystoreLocation = cc.keystore(BrokerID(id))
	c.SSLTruststoreLocation = cc.trust
}

// requestAs sends one frame to a broker's inter-broker listener over TLS
// with the certificate of broker as, dialling broker to.
func requestAs(t testing.TB, ks *clustertls.Keystore, to BrokerID, addr string, frame []byte) (wire.ErrorCode, []byte) {
	t.Helper()
	cl := peer.New(addr, 10*time.Second, ks.ClientConfig(to))
	defer cl.Close()
	code, body, err := cl.RoundTrip(frame, 10*time.Second)
	if err != nil {
		t.Fatalf("request to %s as broker %d: %v", addr, ks.ID(), err)
	}
	return code, append([]byte(nil), body...)
}

// TestReplicationOverTLS: three brokers whose inter-broker listeners are
// mutual TLS replicate an RF=3 partition with acks=-1, and a new leader
// takes over when the leader stops. The 0.7 registration keeps its value;
// the inter-broker endpoint is a node of its own.
func TestReplicationOverTLS(t *testing.T) {
	cc := newClusterCerts(t)
	c := startCluster(t, 3, cc.mod)
	c.createTopic("s", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("s", 0, 3)
	for id, nd := range c.brokers {
		data, err := c.zk.Get(zkcoord.BrokerPath(id))
		if err != nil {
			t.Fatal(err)
		}
		info, err := zkcoord.ParseBrokerInfo(id, string(data))
		if err != nil || info.Addr() != nd.b.Addr {
			t.Fatalf("/brokers/ids/%d = %q (%v), want creatorId:%s", id, data, err, nd.b.Addr)
		}
		host, port, ok, err := zkcoord.RegistryOn(c.zk).InterBrokerEndpoint(id)
		if err != nil || !ok || net.JoinHostPort(host, fmt.Sprint(port)) != nd.interAddr() {
			t.Fatalf("inter-broker endpoint of %d: %s:%d %v %v, want %s", id, host, port, ok, err, nd.interAddr())
		}
	}
	sets, payloads := variedSets(22, "s", 10)
	produceAll(t, c.brokers[leader].b.Addr, "s", 0, wire.AcksAll, sets, "acks=-1 over TLS")
	c.stop(leader)
	next := c.waitLeader("s", 0, 2)
	more, morePayloads := variedSets(23, "t", 5)
	produceAll(t, c.brokers[next].b.Addr, "s", 0, wire.AcksAll, more, "acks=-1 after failover")
	consumeAll(t, c.brokers[next].b.Addr, "s", 0, append(payloads, morePayloads...))
}

// clusterFrames is one frame of each of the cluster's own request types.
func clusterFrames(claim BrokerID) map[string][]byte {
	return map[string][]byte{
		"REPLICA_FETCH": wire.AppendReplicaFetchRequest(nil, &wire.ReplicaFetchRequest{
			ReplicaID: claim, Topic: "r", Partition: 0, LeaderEpoch: 0, Offset: 0, MaxSize: 1000}),
		"OFFSET_FOR_LEADER_EPOCH": wire.AppendOffsetForLeaderEpochRequest(nil, &wire.OffsetForLeaderEpochRequest{
			Topic: "r", Partition: 0, CurrentLeaderEpoch: 0, LeaderEpoch: 0}),
		"LEADER_AND_ISR": wire.AppendLeaderAndISRRequest(nil, &wire.LeaderAndISRRequest{ControllerID: claim, ControllerEpoch: 1000,
			Partitions: []wire.PartitionLeader{{Topic: "r", Partition: 0, Leader: 7, LeaderEpoch: 1000, ISR: []BrokerID{7}, Replicas: []BrokerID{7}}},
			Leaders:    []wire.Broker{{ID: 7, Host: "127.0.0.1", Port: 1}}}),
		"STOP_REPLICA": wire.AppendStopReplicaRequest(nil, &wire.StopReplicaRequest{ControllerID: claim, ControllerEpoch: 1000, Delete: true,
			Partitions: []wire.TopicPartition{{Topic: "r", Partition: 0}}}),
	}
}

// readResponse reads one response frame (size, code, body) off nc.
func readResponse(t *testing.T, nc net.Conn) wire.ErrorCode {
	t.Helper()
	if err := nc.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var hdr [6]byte
	if _, err := io.ReadFull(nc, hdr[:]); err != nil {
		t.Fatalf("reading a response: %v", err)
	}
	size := binary.BigEndian.Uint32(hdr[:4])
	if _, err := io.CopyN(io.Discard, nc, int64(size)-2); err != nil {
		t.Fatalf("reading a response body: %v", err)
	}
	return wire.ErrorCode(binary.BigEndian.Uint16(hdr[4:]))
}

// TestClientPortRefusesClusterRequests: each of the cluster's own request
// types sent in raw bytes to a broker's client port is answered
// ClusterAuthorizationFailed, changes nothing, and the connection goes on
// serving (METADATA after them). Before the inter-broker listener the
// client port served them: a forged STOP_REPLICA deleted the partition.
func TestClientPortRefusesClusterRequests(t *testing.T) {
	c := startCluster(t, 3, nil)
	c.createTopic("r", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("r", 0, 3)
	produceAll(t, c.brokers[leader].b.Addr, "r", 0, wire.AcksAll, [][]byte{wire.NewMessageSet([]byte("kept"))}, "")
	before, _ := c.state("r", 0)
	for _, nd := range c.brokers {
		nc, err := net.Dial("tcp", nd.b.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		names := []string{"REPLICA_FETCH", "OFFSET_FOR_LEADER_EPOCH", "LEADER_AND_ISR", "STOP_REPLICA"}
		frames := clusterFrames(leader)
		for _, name := range names {
			if _, err := nc.Write(frames[name]); err != nil {
				t.Fatal(err)
			}
			if code := readResponse(t, nc); code != wire.CodeClusterAuthorizationFailed {
				t.Errorf("%s on the client port of %s: %v, want %v", name, nd.b.Addr, code, wire.CodeClusterAuthorizationFailed)
			}
		}
		if _, err := nc.Write(wire.AppendMetadataRequest(nil, &wire.MetadataRequest{Topics: []string{"r"}})); err != nil {
			t.Fatal(err)
		}
		if code := readResponse(t, nc); code != wire.CodeNone {
			t.Errorf("METADATA after the refusals: %v", code)
		}
	}
	if after, _ := c.state("r", 0); after.LeaderEpoch != before.LeaderEpoch || after.Leader != before.Leader {
		t.Fatalf("partition state changed: %+v -> %+v", before, after)
	}
	consumeAll(t, c.brokers[leader].b.Addr, "r", 0, []string{"kept"})
	for id, nd := range c.brokers {
		if l, ok := nd.layerPartition("r", 0); !ok || l == nil {
			t.Fatalf("broker %d lost its replica", id)
		}
	}
}

// TestInterBrokerListenerNeedsClusterCertificate: a client with no
// certificate, with a certificate from another CA (naming broker 0 all the
// same), or speaking plaintext, gets no request served on a TLS
// inter-broker listener.
func TestInterBrokerListenerNeedsClusterCertificate(t *testing.T) {
	cc := newClusterCerts(t)
	c := startCluster(t, 1, cc.mod)
	addr := c.brokers[0].interAddr()
	frame := clusterFrames(0)["STOP_REPLICA"]

	// No certificate.
	nc, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
	if err == nil {
		_, err = nc.Write(frame)
		if err == nil {
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err = nc.Read(make([]byte, 1))
		}
		nc.Close()
	}
	if err == nil {
		t.Fatal("a client without a certificate was answered")
	}
	// Another CA's certificate for broker 0.
	other := newClusterCerts(t)
	cl := peer.New(addr, 10*time.Second, other.load(0).ClientConfig(0))
	if _, _, err := cl.RoundTrip(frame, 0); err == nil {
		t.Fatal("a client with another CA's certificate was answered")
	}
	cl.Close()
	// Plaintext.
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Write(frame); err != nil {
		t.Fatal(err)
	}
	raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hdr [6]byte
	if _, err := io.ReadFull(raw, hdr[:]); err == nil && binary.BigEndian.Uint16(hdr[4:]) == 0 {
		t.Fatal("a plaintext STOP_REPLICA was answered NoError")
	}
	// The cluster's own certificate is answered (a stale epoch is fine).
	code, _ := requestAs(t, cc.load(0), 0, addr, clusterFrames(0)["OFFSET_FOR_LEADER_EPOCH"])
	if code == wire.CodeClusterAuthorizationFailed {
		t.Fatalf("broker 0's own certificate refused: %v", code)
	}
}

// TestReplicaFetchMustMatchCertificate: a REPLICA_FETCH claiming a replica
// id other than its certificate's, and orders claiming a controller id
// other than the certificate's, are refused ClusterAuthorizationFailed;
// the dead follower the forged fetch speaks for stays out of the ISR.
// Before, a fetch claiming a dead follower's id put it back in the ISR.
func TestReplicaFetchMustMatchCertificate(t *testing.T) {
	cc := newClusterCerts(t)
	c := startCluster(t, 3, cc.mod)
	c.createTopic("r", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("r", 0, 3)
	dead, live := (leader+1)%3, (leader+2)%3
	c.stop(dead)
	c.waitLeader("r", 0, 2)
	st, _ := c.state("r", 0)
	addr := c.brokers[leader].interAddr()
	as := cc.load(live)
	code, _ := requestAs(t, as, leader, addr, wire.AppendReplicaFetchRequest(nil, &wire.ReplicaFetchRequest{
		ReplicaID: dead, Topic: "r", Partition: 0, LeaderEpoch: st.LeaderEpoch, Offset: 0, MaxSize: 1000}))
	if code != wire.CodeClusterAuthorizationFailed {
		t.Fatalf("REPLICA_FETCH by %d claiming %d: %v, want %v", live, dead, code, wire.CodeClusterAuthorizationFailed)
	}
	for _, name := range []string{"LEADER_AND_ISR", "STOP_REPLICA"} {
		if code, _ := requestAs(t, as, leader, addr, clusterFrames(dead)[name]); code != wire.CodeClusterAuthorizationFailed {
			t.Errorf("%s by %d claiming controller %d: %v, want %v", name, live, dead, code, wire.CodeClusterAuthorizationFailed)
		}
	}
	// Its own id is served.
	if code, _ := requestAs(t, as, leader, addr, wire.AppendReplicaFetchRequest(nil, &wire.ReplicaFetchRequest{
		ReplicaID: live, Topic: "r", Partition: 0, LeaderEpoch: st.LeaderEpoch, Offset: 0, MaxSize: 1000})); code != wire.CodeNone {
		t.Fatalf("REPLICA_FETCH by %d as itself: %v", live, code)
	}
	// The forged fetch was refused before the leader looked at it, so the
	// dead follower is still out of the ISR.
	if now, _ := c.state("r", 0); slices.Contains(now.ISR, dead) {
		t.Fatalf("ISR %v holds the dead follower %d", now.ISR, dead)
	}
	if l, _ := c.brokers[leader].layerPartition("r", 0); slices.Contains(l.leaderState().ISR(), dead) {
		t.Fatalf("the leader's ISR %v holds the dead follower %d", l.leaderState().ISR(), dead)
	}
}
