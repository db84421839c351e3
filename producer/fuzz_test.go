package producer

import (
	"testing"

	"github.com/netdb11/kafka/broker/wire"
)

// metadataBody is the body (after size and code) of a METADATA answer.
func metadataBody(r *wire.MetadataResponse) []byte {
	return wire.AppendMetadataResponse(nil, r)[wire.ResponseHeaderLen:]
}

func seedMetadata() [][]byte {
	return [][]byte{
		metadataBody(&wire.MetadataResponse{
			Brokers: []wire.Broker{{ID: 0, Host: "127.0.0.1", Port: 9092}, {ID: 1, Host: "h", Port: 9093}},
			Topics: []wire.TopicMetadata{{Topic: "t", Partitions: []wire.PartitionMetadata{
				{Partition: 1, Leader: 1, LeaderEpoch: 3, Replicas: []wire.BrokerID{1, 0}, ISR: []wire.BrokerID{1}},
				{Partition: 0, Leader: 0, LeaderEpoch: 2, Replicas: []wire.BrokerID{0, 1}, ISR: []wire.BrokerID{0, 1}},
			}}}}),
		metadataBody(&wire.MetadataResponse{Topics: []wire.TopicMetadata{{Topic: "t", Code: wire.CodeWrongPartition}}}),
		metadataBody(&wire.MetadataResponse{Topics: []wire.TopicMetadata{{Topic: "t", Partitions: []wire.PartitionMetadata{
			{Partition: 0, Code: wire.CodeLeaderNotAvailable, Leader: -1}}}}}),
		{},
	}
}

func TestParseMetadata(t *testing.T) {
	seeds := seedMetadata()
	tm, err := parseMetadata("t", seeds[0])
	if err != nil || !tm.replicated || len(tm.parts) != 2 || tm.parts[0].Partition != 0 {
		t.Fatalf("parseMetadata = %+v, %v", tm, err)
	}
	if id, addr, err := tm.leader(1); err != nil || id != 1 || addr != "h:9093" {
		t.Errorf("leader(1) = %d %q %v", id, addr, err)
	}
	if _, _, err := tm.leader(2); err == nil {
		t.Errorf("leader of a partition the metadata lacks: no error")
	}
	if tm, err := parseMetadata("t", seeds[1]); err != nil || tm.replicated {
		t.Errorf("unassigned topic: %+v, %v; want a 0.7 topic", tm, err)
	}
	tm, err = parseMetadata("t", seeds[2])
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tm.leader(0); err == nil {
		t.Errorf("leader of a partition without one: no error")
	}
	if _, err := parseMetadata("other", seeds[0]); err == nil {
		t.Errorf("an answer without the topic was accepted")
	}
	dup := metadataBody(&wire.MetadataResponse{Topics: []wire.TopicMetadata{{Topic: "t", Partitions: []wire.PartitionMetadata{
		{Partition: 0, Leader: 0}, {Partition: 0, Leader: 1}}}}})
	if _, err := parseMetadata("t", dup); err == nil {
		t.Errorf("a partition listed twice was accepted")
	}
}

// FuzzParseMetadata: any METADATA body is parsed or refused with an error,
// and what is accepted is sorted, without duplicates, and never empty.
func FuzzParseMetadata(f *testing.F) {
	for _, s := range seedMetadata() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		tm, err := parseMetadata("t", body)
		if err != nil {
			return
		}
		if tm.replicated && len(tm.parts) == 0 {
			t.Fatal("a replicated topic without partitions")
		}
		for i := 1; i < len(tm.parts); i++ {
			if tm.parts[i].Partition <= tm.parts[i-1].Partition {
				t.Fatalf("partitions not strictly increasing: %v", tm.parts)
			}
		}
		for _, pm := range tm.parts {
			tm.leader(pm.Partition)
		}
	})
}
