package wire

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func sampleReplicationFrames() map[RequestType][]byte {
	set := NewMessageSet([]byte("a"), []byte("bc"))
	return map[RequestType][]byte{
		RequestMetadata:    AppendMetadataRequest(nil, &MetadataRequest{Topics: []string{"t", "u"}})[4:],
		RequestProduceAcks: AppendProduceAcksRequest(nil, &ProduceAcksRequest{Acks: AcksAll, TimeoutMs: 1500, Parts: []ProduceRequest{{Topic: "t", Partition: 1, Messages: set}}})[4:],
		RequestReplicaFetch: AppendReplicaFetchRequest(nil, &ReplicaFetchRequest{ReplicaID: 2, MaxWaitMs: 500, Topic: "t",
			Partition: 0, LeaderEpoch: 3, Offset: 1234, MaxSize: 1 << 20})[4:],
		RequestOffsetForLeaderEpoch: AppendOffsetForLeaderEpochRequest(nil, &OffsetForLeaderEpochRequest{Topic: "t", Partition: 4, CurrentLeaderEpoch: 8, LeaderEpoch: 7})[4:],
		RequestLeaderAndISR: AppendLeaderAndISRRequest(nil, &LeaderAndISRRequest{ControllerID: 1, ControllerEpoch: 9,
			Partitions: []PartitionLeader{{Topic: "t", Partition: 0, Leader: 2, LeaderEpoch: 5, ZkVersion: 3, ISR: []BrokerID{2, 3}, Replicas: []BrokerID{1, 2, 3}}},
			Leaders:    []Broker{{ID: 2, Host: "127.0.0.1", Port: 9093}}})[4:],
		RequestStopReplica: AppendStopReplicaRequest(nil, &StopReplicaRequest{ControllerID: 1, ControllerEpoch: 2, Delete: true,
			Partitions: []TopicPartition{{"t", 0}, {"u", 3}}})[4:],
	}
}

// decodeReplication decodes a frame of any replication type and re-encodes it.
func decodeReplication(frame []byte) (any, []byte, error) {
	if len(frame) < 2 {
		_, err := DecodeMetadataRequest(frame)
		return nil, nil, err
	}
	switch RequestType(int16(frame[0])<<8 | int16(frame[1])) {
	case RequestMetadata:
		r, err := DecodeMetadataRequest(frame)
		return r, AppendMetadataRequest(nil, r), err
	case RequestProduceAcks:
		r, err := DecodeProduceAcksRequest(frame)
		return r, AppendProduceAcksRequest(nil, r), err
	case RequestReplicaFetch:
		r, err := DecodeReplicaFetchRequest(frame)
		return r, AppendReplicaFetchRequest(nil, r), err
	case RequestOffsetForLeaderEpoch:
		r, err := DecodeOffsetForLeaderEpochRequest(frame)
		return r, AppendOffsetForLeaderEpochRequest(nil, r), err
	case RequestLeaderAndISR:
		r, err := DecodeLeaderAndISRRequest(frame)
		return r, AppendLeaderAndISRRequest(nil, r), err
	case RequestStopReplica:
		r, err := DecodeStopReplicaRequest(frame)
		return r, AppendStopReplicaRequest(nil, r), err
	}
	_, err := DecodeMetadataRequest(frame)
	return nil, nil, err
}

func TestReplicationRequestsRoundTrip(t *testing.T) {
	for typ, frame := range sampleReplicationFrames() {
		if !typ.IsReplication() || typ.String() == "" {
			t.Errorf("%v: not a replication type", typ)
		}
		r, re, err := decodeReplication(frame)
		if err != nil {
			t.Fatalf("%v: %v", typ, err)
		}
		if !bytes.Equal(re[4:], frame) {
			t.Fatalf("%v: re-encoding differs", typ)
		}
		// Every truncation and one trailing byte are malformed.
		for n := 0; n < len(frame); n++ {
			if _, _, err := decodeReplication(frame[:n]); !errors.Is(err, ErrMalformedRequest) {
				t.Fatalf("%v cut at %d: %v (%+v)", typ, n, err, r)
			}
		}
		if _, _, err := decodeReplication(append(append([]byte(nil), frame...), 0)); !errors.Is(err, ErrMalformedRequest) {
			t.Fatalf("%v with a trailing byte: %v", typ, err)
		}
	}
	// The 0.7 decoder refuses the new types: a 2011 broker closes the connection.
	for typ, frame := range sampleReplicationFrames() {
		if _, err := DecodeRequest(frame); !errors.Is(err, ErrMalformedRequest) {
			t.Errorf("DecodeRequest(%v) = %v", typ, err)
		}
	}
	bad := AppendProduceAcksRequest(nil, &ProduceAcksRequest{Acks: 2})[4:]
	if _, err := DecodeProduceAcksRequest(bad); !errors.Is(err, ErrMalformedRequest) {
		t.Fatalf("acks=2 accepted: %v", err)
	}
}

func TestReplicationResponsesRoundTrip(t *testing.T) {
	md := &MetadataResponse{Brokers: []Broker{{1, "h", 9092}, {2, "i", 9093}},
		Topics: []TopicMetadata{{Topic: "t", Partitions: []PartitionMetadata{{Partition: 0, Leader: 1, LeaderEpoch: 2, Replicas: []BrokerID{1, 2}, ISR: []BrokerID{1}}}},
			{Topic: "x", Code: CodeWrongPartition}}}
	frame := AppendMetadataResponse(nil, md)
	got, err := DecodeMetadataResponse(frame[ResponseHeaderLen:])
	if err != nil || !reflect.DeepEqual(got, md) {
		t.Fatalf("metadata: %+v, %v", got, err)
	}

	prs := []ProduceResult{{"t", 0, CodeNone, 10}, {"t", 1, CodeNotEnoughReplicas, -1}}
	frame = AppendProduceAcksResponse(nil, prs)
	if code := ErrorCode(int16(frame[4])<<8 | int16(frame[5])); code != CodeNotEnoughReplicas {
		t.Fatalf("top-level code %v", code)
	}
	gotp, err := DecodeProduceAcksResponse(frame[ResponseHeaderLen:])
	if err != nil || !reflect.DeepEqual(gotp, prs) {
		t.Fatalf("produce acks: %+v, %v", gotp, err)
	}

	set := NewMessageSet([]byte("xyz"))
	epochs := []EpochMark{{1, 0}, {2, 40}}
	frame = AppendReplicaFetchResponseHeader(nil, CodeNone, 30, 50, epochs, len(set))
	frame = append(frame, set...)
	if size := int(frame[0])<<24 | int(frame[1])<<16 | int(frame[2])<<8 | int(frame[3]); size != len(frame)-4 {
		t.Fatalf("replica fetch size field %d, frame %d", size, len(frame))
	}
	rf, err := DecodeReplicaFetchResponse(frame[ResponseHeaderLen:])
	if err != nil || rf.HW != 30 || rf.LEO != 50 || !reflect.DeepEqual(rf.Epochs, epochs) || !bytes.Equal(rf.Messages, set) {
		t.Fatalf("replica fetch: %+v, %v", rf, err)
	}

	frame = AppendOffsetForLeaderEpochResponse(nil, CodeNone, 4, 999)
	if e, end, err := DecodeOffsetForLeaderEpochResponse(frame[ResponseHeaderLen:]); err != nil || e != 4 || end != 999 {
		t.Fatalf("offset for epoch: %d %d %v", e, end, err)
	}

	pes := []PartitionError{{"t", 0, CodeNone}, {"t", 1, CodeStaleControllerEpoch}}
	frame = AppendPartitionErrorsResponse(nil, CodeNone, pes)
	gote, err := DecodePartitionErrorsResponse(frame[ResponseHeaderLen:])
	if err != nil || !reflect.DeepEqual(gote, pes) {
		t.Fatalf("partition errors: %+v, %v", gote, err)
	}
}

func TestReplicationErrorCodes(t *testing.T) {
	for _, c := range []ErrorCode{CodeLeaderNotAvailable, CodeNotLeaderForPartition, CodeRequestTimedOut,
		CodeReplicaNotAvailable, CodeStaleControllerEpoch, CodeNotEnoughReplicas, CodeNotEnoughReplicasAfterAppend,
		CodeFencedLeaderEpoch, CodeUnknownLeaderEpoch, CodeNotMessageBoundary} {
		err := c.Err()
		if err == nil || CodeOf(err) != c || CodeOf(errors.Join(errors.New("x"), err)) != c {
			t.Errorf("code %d: Err %v, back %v", c, err, CodeOf(err))
		}
		if s := c.String(); s == "" || s[0] == 'E' {
			t.Errorf("code %d has no name: %q", c, s)
		}
	}
}

// TestMetadataRequestDedupAndLimit: one topic named 32,767 times decodes to
// one topic (before: 32,767, which took a broker 45 s and 4.8 MB to
// answer); more than MaxMetadataTopics distinct topics is refused.
func TestMetadataRequestDedupAndLimit(t *testing.T) {
	same := make([]string, 32765) // + "u", "t": the most an int16 count allows
	for i := range same {
		same[i] = "t"
	}
	frame := AppendMetadataRequest(nil, &MetadataRequest{Topics: append(same, "u", "t")})[4:]
	r, err := DecodeMetadataRequest(frame)
	if err != nil || !reflect.DeepEqual(r.Topics, []string{"t", "u"}) {
		t.Fatalf("decoded %d topics (%v), want [t u]", len(r.Topics), err)
	}
	many := make([]string, MaxMetadataTopics+1)
	for i := range many {
		many[i] = fmt.Sprintf("t%d", i)
	}
	if r, err := DecodeMetadataRequest(AppendMetadataRequest(nil, &MetadataRequest{Topics: many[:MaxMetadataTopics]})[4:]); err != nil || len(r.Topics) != MaxMetadataTopics {
		t.Fatalf("%d distinct topics: %v", MaxMetadataTopics, err)
	}
	if _, err := DecodeMetadataRequest(AppendMetadataRequest(nil, &MetadataRequest{Topics: many})[4:]); !errors.Is(err, ErrMalformedRequest) {
		t.Fatalf("%d distinct topics: %v, want ErrMalformedRequest", len(many), err)
	}
}
