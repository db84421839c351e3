package wire

import (
	"encoding/binary"
	"strconv"
)

// The request types of the replication layer (broker/replica). They extend
// 0.7's framing (size, type, body) with ids 0.7 does not use; each has a
// response (size, error, body). A 2011 broker closes the connection of a
// client that sends one, as it does for any unknown type.
const (
	RequestMetadata             RequestType = 10
	RequestProduceAcks          RequestType = 11
	RequestReplicaFetch         RequestType = 12
	RequestOffsetForLeaderEpoch RequestType = 13
	RequestLeaderAndISR         RequestType = 14
	RequestStopReplica          RequestType = 15
)

// replicationNames names the replication request types.
var replicationNames = map[RequestType]string{
	RequestMetadata:             "METADATA",
	RequestProduceAcks:          "PRODUCE_ACKS",
	RequestReplicaFetch:         "REPLICA_FETCH",
	RequestOffsetForLeaderEpoch: "OFFSET_FOR_LEADER_EPOCH",
	RequestLeaderAndISR:         "LEADER_AND_ISR",
	RequestStopReplica:          "STOP_REPLICA",
}

// IsReplication reports whether t is a request type of the replication layer.
func (t RequestType) IsReplication() bool { _, ok := replicationNames[t]; return ok }

// IsInterBroker reports whether t is one of the cluster's own requests
// (REPLICA_FETCH, OFFSET_FOR_LEADER_EPOCH, LEADER_AND_ISR, STOP_REPLICA),
// which a broker serves only on its inter-broker listener (replica.port);
// METADATA and PRODUCE_ACKS are clients' requests.
func (t RequestType) IsInterBroker() bool {
	switch t {
	case RequestReplicaFetch, RequestOffsetForLeaderEpoch, RequestLeaderAndISR, RequestStopReplica:
		return true
	}
	return false
}

// Acknowledgement levels of a PRODUCE_ACKS request (request.required.acks).
const (
	// AcksNone: no response is awaited (0.7's PRODUCE); in PRODUCE_ACKS
	// the broker answers at once, before appending.
	AcksNone int16 = 0
	// AcksLeader: the leader appended the messages.
	AcksLeader int16 = 1
	// AcksAll: every in-sync replica holds them (the HW passed their end).
	AcksAll int16 = -1
)

// MetadataRequest asks for the partitions, leaders, replicas and ISRs of
// topics (type 10); no topic means every replicated topic.
type MetadataRequest struct {
	Topics []string
}

// ProduceAcksRequest appends message sets and answers when they are
// acknowledged at level Acks, or after TimeoutMs (type 11).
type ProduceAcksRequest struct {
	Acks      int16
	TimeoutMs int32
	Parts     []ProduceRequest
}

// ReplicaFetchRequest is a follower's fetch (type 12): ReplicaID is the
// follower, LeaderEpoch the epoch it believes current (the leader refuses a
// stale or newer one), Offset its log end offset, which tells the leader how
// far it has copied. MaxWaitMs bounds how long the leader may hold the
// request when it has nothing new.
type ReplicaFetchRequest struct {
	ReplicaID   BrokerID
	MaxWaitMs   int32
	Topic       string
	Partition   Partition
	LeaderEpoch int32
	Offset      Offset
	MaxSize     int32
}

// OffsetForLeaderEpochRequest asks the leader where an epoch ends (type 13,
// KIP-101). CurrentLeaderEpoch is the leader epoch of the order the
// follower acts on (KIP-320): a leader of another epoch refuses the request
// (FencedLeaderEpoch if the follower's is older, UnknownLeaderEpoch if
// newer), so a follower never truncates against a stale leader; -1 skips
// the check.
type OffsetForLeaderEpochRequest struct {
	Topic              string
	Partition          Partition
	CurrentLeaderEpoch int32
	LeaderEpoch        int32
}

// PartitionLeader is one partition's state in a LEADER_AND_ISR request.
type PartitionLeader struct {
	Topic       string
	Partition   Partition
	Leader      BrokerID
	LeaderEpoch int32
	// ZkVersion is the version of the partition's state node the
	// controller wrote; the leader's ISR writes are conditional on it.
	ZkVersion int32
	ISR       []BrokerID
	Replicas  []BrokerID
}

// LeaderAndISRRequest is the controller's order to brokers (type 14): lead
// or follow these partitions. Brokers ignore it when ControllerEpoch is
// older than one they have seen, and ignore a partition whose LeaderEpoch is
// not newer than the one they have.
type LeaderAndISRRequest struct {
	ControllerID    BrokerID
	ControllerEpoch int32
	Partitions      []PartitionLeader
	// Leaders are the addresses of the leaders named above.
	Leaders []Broker
}

// TopicPartition names one partition of a topic: in requests, and (with
// its JSON names) in the ZooKeeper documents that list partitions, such as
// /admin/preferred_replica_election.
type TopicPartition struct {
	Topic     string    `json:"topic"`
	Partition Partition `json:"partition"`
}

// String is "topic-partition".
func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10)
}

// StopReplicaRequest tells a broker to stop replicating partitions (type 15),
// and with Delete to remove them.
type StopReplicaRequest struct {
	ControllerID    BrokerID
	ControllerEpoch int32
	Delete          bool
	Partitions      []TopicPartition
}

func appendIDs(dst []byte, xs []BrokerID) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(xs)))
	for _, x := range xs {
		dst = binary.BigEndian.AppendUint32(dst, uint32(x))
	}
	return dst
}

func (d *decoder) ids(what string) []BrokerID {
	n := d.int32(what + " count")
	if n < 0 || int64(n)*4 > int64(len(d.b)-d.pos) {
		d.fail("%s count %d does not fit the %d remaining bytes", what, n, len(d.b)-d.pos)
		return nil
	}
	out := make([]BrokerID, n)
	for i := range out {
		out[i] = BrokerID(d.int32(what))
	}
	return out
}

// frame wraps a body appender into a request frame of type t.
func frame(dst []byte, t RequestType, body func([]byte) []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(t))
	dst = body(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// body checks a request frame's type and returns a decoder over its body.
func body(frame []byte, t RequestType) *decoder {
	d := &decoder{b: frame}
	if got := RequestType(d.int16("request type")); d.err == nil && got != t {
		d.fail("request type %v, want %v", got, t)
	}
	return d
}

// finish reports trailing bytes and the first error.
func (d *decoder) finish(what string) error {
	if d.err == nil && d.pos != len(d.b) {
		d.fail("%d trailing bytes after the %s", len(d.b)-d.pos, what)
	}
	return d.err
}

// AppendMetadataRequest appends a METADATA request frame.
func AppendMetadataRequest(dst []byte, r *MetadataRequest) []byte {
	return frame(dst, RequestMetadata, func(b []byte) []byte {
		b = binary.BigEndian.AppendUint16(b, uint16(len(r.Topics)))
		for _, t := range r.Topics {
			b = AppendString(b, t)
		}
		return b
	})
}

// MaxMetadataTopics bounds the distinct topics one METADATA request may
// name. The broker answers each from ZooKeeper (a few reads per topic);
// a client that wants more asks for every topic (no topic named).
//
// Deviation: Kafka has no such limit (it answers from a cache).
const MaxMetadataTopics = 1000

// DecodeMetadataRequest decodes a METADATA frame (type and body). Topics
// come back once each, in the order of their first mention, as Kafka
// collects them into a set: a request naming one topic 32,767 times asks
// for one topic (it took a broker 45 s and 4.8 MB to answer before). More
// than MaxMetadataTopics distinct topics is an error (ErrMalformedRequest).
func DecodeMetadataRequest(frame []byte) (*MetadataRequest, error) {
	d := body(frame, RequestMetadata)
	n := d.count()
	r := &MetadataRequest{}
	seen := make(map[string]struct{}, min(n, MaxMetadataTopics))
	for i := 0; i < n && d.err == nil; i++ {
		before := d.pos
		d.string("topic")
		if d.err != nil {
			break
		}
		name := d.b[before+2 : d.pos]
		if _, dup := seen[string(name)]; dup {
			continue
		}
		if len(seen) == MaxMetadataTopics {
			d.fail("more than %d distinct topics", MaxMetadataTopics)
			break
		}
		t := string(name)
		seen[t] = struct{}{}
		r.Topics = append(r.Topics, t)
	}
	return r, d.finish("METADATA body")
}

// AppendProduceAcksRequest appends a PRODUCE_ACKS request frame.
func AppendProduceAcksRequest(dst []byte, r *ProduceAcksRequest) []byte {
	return frame(dst, RequestProduceAcks, func(b []byte) []byte {
		b = binary.BigEndian.AppendUint16(b, uint16(r.Acks))
		b = binary.BigEndian.AppendUint32(b, uint32(r.TimeoutMs))
		b = binary.BigEndian.AppendUint16(b, uint16(len(r.Parts)))
		for i := range r.Parts {
			b = r.Parts[i].appendBody(b)
		}
		return b
	})
}

// DecodeProduceAcksRequest decodes a PRODUCE_ACKS frame; the message sets
// alias frame.
func DecodeProduceAcksRequest(frame []byte) (*ProduceAcksRequest, error) {
	d := body(frame, RequestProduceAcks)
	r := &ProduceAcksRequest{Acks: d.int16("acks"), TimeoutMs: d.int32("timeout")}
	n := d.count()
	for i := 0; i < n && d.err == nil; i++ {
		r.Parts = append(r.Parts, d.produce())
	}
	if d.err == nil && r.Acks != AcksNone && r.Acks != AcksLeader && r.Acks != AcksAll {
		d.fail("acks %d: want 0, 1 or -1", r.Acks)
	}
	return r, d.finish("PRODUCE_ACKS body")
}

// AppendReplicaFetchRequest appends a REPLICA_FETCH request frame.
func AppendReplicaFetchRequest(dst []byte, r *ReplicaFetchRequest) []byte {
	return frame(dst, RequestReplicaFetch, func(b []byte) []byte {
		b = binary.BigEndian.AppendUint32(b, uint32(r.ReplicaID))
		b = binary.BigEndian.AppendUint32(b, uint32(r.MaxWaitMs))
		b = AppendString(b, r.Topic)
		b = binary.BigEndian.AppendUint32(b, uint32(r.Partition))
		b = binary.BigEndian.AppendUint32(b, uint32(r.LeaderEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(r.Offset))
		return binary.BigEndian.AppendUint32(b, uint32(r.MaxSize))
	})
}

// DecodeReplicaFetchRequest decodes a REPLICA_FETCH frame.
func DecodeReplicaFetchRequest(frame []byte) (*ReplicaFetchRequest, error) {
	d := body(frame, RequestReplicaFetch)
	r := &ReplicaFetchRequest{ReplicaID: BrokerID(d.int32("replica id")), MaxWaitMs: d.int32("max wait"),
		Topic: d.string("topic"), Partition: Partition(d.int32("partition")), LeaderEpoch: d.int32("leader epoch"),
		Offset: Offset(d.int64("offset")), MaxSize: d.int32("max size")}
	return r, d.finish("REPLICA_FETCH body")
}

// AppendOffsetForLeaderEpochRequest appends an OFFSET_FOR_LEADER_EPOCH frame.
func AppendOffsetForLeaderEpochRequest(dst []byte, r *OffsetForLeaderEpochRequest) []byte {
	return frame(dst, RequestOffsetForLeaderEpoch, func(b []byte) []byte {
		b = AppendString(b, r.Topic)
		b = binary.BigEndian.AppendUint32(b, uint32(r.Partition))
		b = binary.BigEndian.AppendUint32(b, uint32(r.CurrentLeaderEpoch))
		return binary.BigEndian.AppendUint32(b, uint32(r.LeaderEpoch))
	})
}

// DecodeOffsetForLeaderEpochRequest decodes an OFFSET_FOR_LEADER_EPOCH frame.
func DecodeOffsetForLeaderEpochRequest(frame []byte) (*OffsetForLeaderEpochRequest, error) {
	d := body(frame, RequestOffsetForLeaderEpoch)
	r := &OffsetForLeaderEpochRequest{Topic: d.string("topic"), Partition: Partition(d.int32("partition")),
		CurrentLeaderEpoch: d.int32("current leader epoch"), LeaderEpoch: d.int32("leader epoch")}
	return r, d.finish("OFFSET_FOR_LEADER_EPOCH body")
}

func appendEndpoint(b []byte, e Broker) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(e.ID))
	b = AppendString(b, e.Host)
	return binary.BigEndian.AppendUint32(b, uint32(e.Port))
}

func (d *decoder) endpoint() Broker {
	return Broker{ID: BrokerID(d.int32("broker id")), Host: d.string("host"), Port: int(d.int32("port"))}
}

// AppendLeaderAndISRRequest appends a LEADER_AND_ISR request frame.
func AppendLeaderAndISRRequest(dst []byte, r *LeaderAndISRRequest) []byte {
	return frame(dst, RequestLeaderAndISR, func(b []byte) []byte {
		b = binary.BigEndian.AppendUint32(b, uint32(r.ControllerID))
		b = binary.BigEndian.AppendUint32(b, uint32(r.ControllerEpoch))
		b = binary.BigEndian.AppendUint16(b, uint16(len(r.Partitions)))
		for _, p := range r.Partitions {
			b = AppendString(b, p.Topic)
			b = binary.BigEndian.AppendUint32(b, uint32(p.Partition))
			b = binary.BigEndian.AppendUint32(b, uint32(p.Leader))
			b = binary.BigEndian.AppendUint32(b, uint32(p.LeaderEpoch))
			b = binary.BigEndian.AppendUint32(b, uint32(p.ZkVersion))
			b = appendIDs(b, p.ISR)
			b = appendIDs(b, p.Replicas)
		}
		b = binary.BigEndian.AppendUint16(b, uint16(len(r.Leaders)))
		for _, e := range r.Leaders {
			b = appendEndpoint(b, e)
		}
		return b
	})
}

// DecodeLeaderAndISRRequest decodes a LEADER_AND_ISR frame.
func DecodeLeaderAndISRRequest(frame []byte) (*LeaderAndISRRequest, error) {
	d := body(frame, RequestLeaderAndISR)
	r := &LeaderAndISRRequest{ControllerID: BrokerID(d.int32("controller id")), ControllerEpoch: d.int32("controller epoch")}
	n := d.count()
	for i := 0; i < n && d.err == nil; i++ {
		r.Partitions = append(r.Partitions, PartitionLeader{Topic: d.string("topic"), Partition: Partition(d.int32("partition")),
			Leader: BrokerID(d.int32("leader")), LeaderEpoch: d.int32("leader epoch"), ZkVersion: d.int32("zk version"),
			ISR: d.ids("isr"), Replicas: d.ids("replicas")})
	}
	n = d.count()
	for i := 0; i < n && d.err == nil; i++ {
		r.Leaders = append(r.Leaders, d.endpoint())
	}
	return r, d.finish("LEADER_AND_ISR body")
}

// AppendStopReplicaRequest appends a STOP_REPLICA request frame.
func AppendStopReplicaRequest(dst []byte, r *StopReplicaRequest) []byte {
	return frame(dst, RequestStopReplica, func(b []byte) []byte {
		b = binary.BigEndian.AppendUint32(b, uint32(r.ControllerID))
		b = binary.BigEndian.AppendUint32(b, uint32(r.ControllerEpoch))
		del := byte(0)
		if r.Delete {
			del = 1
		}
		b = append(b, del)
		b = binary.BigEndian.AppendUint16(b, uint16(len(r.Partitions)))
		for _, p := range r.Partitions {
			b = AppendString(b, p.Topic)
			b = binary.BigEndian.AppendUint32(b, uint32(p.Partition))
		}
		return b
	})
}

// DecodeStopReplicaRequest decodes a STOP_REPLICA frame.
func DecodeStopReplicaRequest(frame []byte) (*StopReplicaRequest, error) {
	d := body(frame, RequestStopReplica)
	r := &StopReplicaRequest{ControllerID: BrokerID(d.int32("controller id")), ControllerEpoch: d.int32("controller epoch")}
	if p := d.take(1, "delete flag"); p != nil {
		if p[0] > 1 {
			d.fail("delete flag %d: want 0 or 1", p[0])
		}
		r.Delete = p[0] == 1
	}
	n := d.count()
	for i := 0; i < n && d.err == nil; i++ {
		r.Partitions = append(r.Partitions, TopicPartition{Topic: d.string("topic"), Partition: Partition(d.int32("partition"))})
	}
	return r, d.finish("STOP_REPLICA body")
}

// String names a replication request type; RequestType.String uses it.
func replicationName(t RequestType) (string, bool) {
	s, ok := replicationNames[t]
	return s, ok
}
