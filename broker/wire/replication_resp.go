package wire

import "encoding/binary"

// PartitionMetadata is one partition in a METADATA response.
type PartitionMetadata struct {
	Partition   Partition
	Code        ErrorCode // e.g. CodeLeaderNotAvailable
	Leader      BrokerID  // -1: none
	LeaderEpoch int32
	Replicas    []BrokerID
	ISR         []BrokerID
}

// TopicMetadata is one topic in a METADATA response.
type TopicMetadata struct {
	Topic      string
	Code       ErrorCode // e.g. CodeWrongPartition for an unknown topic
	Partitions []PartitionMetadata
}

// MetadataResponse answers METADATA: the live brokers and each topic's
// partitions.
type MetadataResponse struct {
	Brokers []Broker
	Topics  []TopicMetadata
}

// response wraps a body appender into a response frame with code.
func response(dst []byte, code ErrorCode, body func([]byte) []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(code))
	dst = body(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// AppendErrorResponse appends a response frame carrying only code: the
// answer to a replication request refused as a whole.
func AppendErrorResponse(dst []byte, code ErrorCode) []byte {
	return AppendResponseHeader(dst, code, 0)
}

// AppendMetadataResponse appends a whole METADATA response frame.
func AppendMetadataResponse(dst []byte, r *MetadataResponse) []byte {
	return response(dst, CodeNone, func(b []byte) []byte {
		b = binary.BigEndian.AppendUint32(b, uint32(len(r.Brokers)))
		for _, e := range r.Brokers {
			b = appendEndpoint(b, e)
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(r.Topics)))
		for _, t := range r.Topics {
			b = AppendString(b, t.Topic)
			b = binary.BigEndian.AppendUint16(b, uint16(t.Code))
			b = binary.BigEndian.AppendUint32(b, uint32(len(t.Partitions)))
			for _, p := range t.Partitions {
				b = binary.BigEndian.AppendUint32(b, uint32(p.Partition))
				b = binary.BigEndian.AppendUint16(b, uint16(p.Code))
				b = binary.BigEndian.AppendUint32(b, uint32(p.Leader))
				b = binary.BigEndian.AppendUint32(b, uint32(p.LeaderEpoch))
				b = appendIDs(b, p.Replicas)
				b = appendIDs(b, p.ISR)
			}
		}
		return b
	})
}

// count32 reads an int32 count whose elements take at least min bytes each.
func (d *decoder) count32(what string, min int) int {
	n := d.int32(what)
	if n < 0 || int64(n)*int64(min) > int64(len(d.b)-d.pos) {
		d.fail("%s %d does not fit the %d remaining bytes", what, n, len(d.b)-d.pos)
		return 0
	}
	return int(n)
}

// DecodeMetadataResponse decodes a METADATA response body (after the error code).
func DecodeMetadataResponse(body []byte) (*MetadataResponse, error) {
	d := &decoder{b: body}
	r := &MetadataResponse{}
	n := d.count32("broker count", 10)
	for i := 0; i < n && d.err == nil; i++ {
		r.Brokers = append(r.Brokers, d.endpoint())
	}
	n = d.count32("topic count", 8)
	for i := 0; i < n && d.err == nil; i++ {
		t := TopicMetadata{Topic: d.string("topic"), Code: ErrorCode(d.int16("topic error"))}
		m := d.count32("partition count", 22)
		for j := 0; j < m && d.err == nil; j++ {
			t.Partitions = append(t.Partitions, PartitionMetadata{Partition: Partition(d.int32("partition")),
				Code: ErrorCode(d.int16("partition error")), Leader: BrokerID(d.int32("leader")),
				LeaderEpoch: d.int32("leader epoch"), Replicas: d.ids("replicas"), ISR: d.ids("isr")})
		}
		r.Topics = append(r.Topics, t)
	}
	return r, d.finish("METADATA response")
}

// ProduceResult is one part's outcome in a PRODUCE_ACKS response: its code
// and the offset of its first message.
type ProduceResult struct {
	Topic     string
	Partition Partition
	Code      ErrorCode
	Offset    Offset
}

// AppendProduceAcksResponse appends a whole PRODUCE_ACKS response frame. Its
// top-level code is the first part's error, if any.
func AppendProduceAcksResponse(dst []byte, rs []ProduceResult) []byte {
	code := CodeNone
	for _, r := range rs {
		if r.Code != CodeNone {
			code = r.Code
			break
		}
	}
	return response(dst, code, func(b []byte) []byte {
		b = binary.BigEndian.AppendUint16(b, uint16(len(rs)))
		for _, r := range rs {
			b = AppendString(b, r.Topic)
			b = binary.BigEndian.AppendUint32(b, uint32(r.Partition))
			b = binary.BigEndian.AppendUint16(b, uint16(r.Code))
			b = binary.BigEndian.AppendUint64(b, uint64(r.Offset))
		}
		return b
	})
}

// DecodeProduceAcksResponse decodes a PRODUCE_ACKS response body.
func DecodeProduceAcksResponse(body []byte) ([]ProduceResult, error) {
	d := &decoder{b: body}
	n := d.count()
	var out []ProduceResult
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, ProduceResult{Topic: d.string("topic"), Partition: Partition(d.int32("partition")),
			Code: ErrorCode(d.int16("error")), Offset: Offset(d.int64("offset"))})
	}
	return out, d.finish("PRODUCE_ACKS response")
}

// EpochMark is a (leader epoch, start offset) pair of the leader's epoch list.
type EpochMark struct {
	Epoch int32
	Start Offset
}

// ReplicaFetchResponse is the body of a REPLICA_FETCH response: the leader's
// high watermark and log end, the epoch marks that start in the fetched range
// (and the one covering its first byte), and the bytes, which may end
// mid-message (the follower keeps the complete messages).
type ReplicaFetchResponse struct {
	HW, LEO  Offset
	Epochs   []EpochMark
	Messages []byte
}

// ReplicaFetchHeaderLen is the size of a REPLICA_FETCH response's fixed
// part after the frame header: hw, leo and the epoch count.
const ReplicaFetchHeaderLen = 8 + 8 + 2

// AppendReplicaFetchResponseHeader appends the frame header and everything
// but the message bytes of a REPLICA_FETCH response; the caller sends the
// setLen bytes of messages next (with sendfile).
func AppendReplicaFetchResponseHeader(dst []byte, code ErrorCode, hw, leo Offset, epochs []EpochMark, setLen int) []byte {
	dst = AppendResponseHeader(dst, code, ReplicaFetchHeaderLen+12*len(epochs)+setLen)
	dst = binary.BigEndian.AppendUint64(dst, uint64(hw))
	dst = binary.BigEndian.AppendUint64(dst, uint64(leo))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(epochs)))
	for _, e := range epochs {
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.Epoch))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.Start))
	}
	return dst
}

// DecodeReplicaFetchResponse decodes a REPLICA_FETCH response body (after
// the error code); Messages aliases body.
func DecodeReplicaFetchResponse(body []byte) (*ReplicaFetchResponse, error) {
	d := &decoder{b: body}
	r := &ReplicaFetchResponse{HW: Offset(d.int64("hw")), LEO: Offset(d.int64("leo"))}
	n := d.count()
	for i := 0; i < n && d.err == nil; i++ {
		r.Epochs = append(r.Epochs, EpochMark{Epoch: d.int32("epoch"), Start: Offset(d.int64("start"))})
	}
	if d.err == nil {
		r.Messages = d.b[d.pos:]
		d.pos = len(d.b)
	}
	return r, d.err
}

// AppendOffsetForLeaderEpochResponse appends a whole OFFSET_FOR_LEADER_EPOCH
// response frame: the largest epoch at or below the asked one that the
// leader knows, and where it ends (-1, -1 if none).
func AppendOffsetForLeaderEpochResponse(dst []byte, code ErrorCode, epoch int32, end int64) []byte {
	return response(dst, code, func(b []byte) []byte {
		b = binary.BigEndian.AppendUint32(b, uint32(epoch))
		return binary.BigEndian.AppendUint64(b, uint64(end))
	})
}

// DecodeOffsetForLeaderEpochResponse decodes its body.
func DecodeOffsetForLeaderEpochResponse(body []byte) (epoch int32, end int64, err error) {
	d := &decoder{b: body}
	epoch, end = d.int32("epoch"), d.int64("end offset")
	return epoch, end, d.finish("OFFSET_FOR_LEADER_EPOCH response")
}

// PartitionError is one partition's outcome in a LEADER_AND_ISR or
// STOP_REPLICA response.
type PartitionError struct {
	Topic     string
	Partition Partition
	Code      ErrorCode
}

// AppendPartitionErrorsResponse appends a LEADER_AND_ISR or STOP_REPLICA
// response frame.
func AppendPartitionErrorsResponse(dst []byte, code ErrorCode, ps []PartitionError) []byte {
	return response(dst, code, func(b []byte) []byte {
		b = binary.BigEndian.AppendUint16(b, uint16(len(ps)))
		for _, p := range ps {
			b = AppendString(b, p.Topic)
			b = binary.BigEndian.AppendUint32(b, uint32(p.Partition))
			b = binary.BigEndian.AppendUint16(b, uint16(p.Code))
		}
		return b
	})
}

// DecodePartitionErrorsResponse decodes a LEADER_AND_ISR or STOP_REPLICA
// response body.
func DecodePartitionErrorsResponse(body []byte) ([]PartitionError, error) {
	d := &decoder{b: body}
	n := d.count()
	var out []PartitionError
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, PartitionError{Topic: d.string("topic"), Partition: Partition(d.int32("partition")),
			Code: ErrorCode(d.int16("error"))})
	}
	return out, d.finish("response")
}
