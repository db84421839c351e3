package consumer

import (
	"errors"
	"strings"
	"testing"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/wire"
)

func TestLeaderAddr(t *testing.T) {
	md := &wire.MetadataResponse{
		Brokers: []wire.Broker{{ID: 1, Host: "h1", Port: 9092}, {ID: 2, Host: "h2", Port: 9093}},
		Topics: []wire.TopicMetadata{
			{Topic: "r", Partitions: []wire.PartitionMetadata{
				{Partition: 0, Leader: 2},
				{Partition: 1, Leader: -1, Code: wire.CodeLeaderNotAvailable},
				{Partition: 2, Leader: 7},
			}},
			{Topic: "plain", Code: wire.CodeWrongPartition},
		},
	}
	if id, addr, err := LeaderAddr(md, "r", 0); err != nil || id != 2 || addr != "h2:9093" {
		t.Fatalf("r-0: %d %q %v", id, addr, err)
	}
	for _, tc := range []struct {
		topic string
		p     wire.Partition
		want  error
	}{
		{"r", 1, wire.ErrLeaderNotAvailable},
		{"r", 2, wire.ErrLeaderNotAvailable}, // leader not live
		{"r", 9, wire.ErrWrongPartition},
		{"plain", 0, ErrNotReplicated},
		{"absent", 0, ErrNotReplicated},
	} {
		if _, _, err := LeaderAddr(md, tc.topic, tc.p); !errors.Is(err, tc.want) {
			t.Errorf("%s-%d: %v, want %v", tc.topic, tc.p, err, tc.want)
		}
	}
}

// The 2011 broker does not know METADATA: it closes the connection, and
// Metadata says so; the consumer stays usable.
func TestMetadataFrom2011Broker(t *testing.T) {
	b := brokertest.Start(t, brokertest.Config())
	c, err := NewSimpleConsumer(b.Addr, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Metadata(t.Context(), "t"); err == nil || !strings.Contains(err.Error(), "replication layer") {
		t.Fatalf("Metadata from a 2011 broker = %v, want an error naming the replication layer", err)
	}
	if _, err := c.Metadata(t.Context(), "bad/topic"); err == nil {
		t.Fatal("a bad topic name was sent")
	}
	if _, err := c.OffsetsBefore(t.Context(), "t", 0, wire.LatestTime, 1); err != nil {
		t.Fatalf("the consumer after a refused METADATA: %v", err)
	}
}
