package broker_test

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/replicatest"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// metadataRoundTrip sends one METADATA request frame on a new raw TCP
// connection and returns the decoded answer and how long it took.
func metadataRoundTrip(t *testing.T, addr string, frame []byte) (*wire.MetadataResponse, wire.ErrorCode, time.Duration) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(60 * time.Second))
	start := time.Now()
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	var hdr [wire.ResponseHeaderLen]byte
	if _, err := io.ReadFull(nc, hdr[:]); err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:4])-2)
	if _, err := io.ReadFull(nc, body); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	code := wire.ErrorCode(int16(binary.BigEndian.Uint16(hdr[4:])))
	if code != wire.CodeNone {
		return nil, code, took
	}
	md, err := wire.DecodeMetadataResponse(body)
	if err != nil {
		t.Fatal(err)
	}
	return md, code, took
}

// TestMetadataRepeatedTopic: a METADATA request naming one topic 32,767
// times (the most its int16 count allows) is answered at once with one
// entry. Before, the broker read ZooKeeper for each: 45 s and a 4.8 MB
// answer on the cluster, 32 s here (35 ms after). More than wire.MaxMetadataTopics distinct
// topics close the connection without an answer.
func TestMetadataRepeatedTopic(t *testing.T) {
	c := replicatest.StartCluster(t, 1, nil)
	c.CreateTopic("m", zkcoord.Assignment{0: {0}, 1: {0}})
	c.WaitISR("m", 1, 1)
	topics := make([]string, 32767)
	for i := range topics {
		topics[i] = "m"
	}
	md, code, took := metadataRoundTrip(t, c.Nodes[0].B.Addr, wire.AppendMetadataRequest(nil, &wire.MetadataRequest{Topics: topics}))
	t.Logf("METADATA naming m 32,767 times: answered in %v", took)
	if code != wire.CodeNone || len(md.Topics) != 1 || md.Topics[0].Topic != "m" || len(md.Topics[0].Partitions) != 2 {
		n := 0
		if md != nil {
			n = len(md.Topics)
		}
		t.Fatalf("code %v, %d topic entries, want one for m with 2 partitions", code, n)
	}
	if took > 5*time.Second {
		t.Fatalf("answered in %v", took)
	}

	many := make([]string, wire.MaxMetadataTopics+1)
	for i := range many {
		many[i] = "t" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
	}
	nc, err := net.Dial("tcp", c.Nodes[0].B.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := nc.Write(wire.AppendMetadataRequest(nil, &wire.MetadataRequest{Topics: many})); err != nil {
		t.Fatal(err)
	}
	if n, err := nc.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("%d distinct topics: read %d bytes, %v; want the connection closed", len(many), n, err)
	}
}
