package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// RequestType is the int16 that follows a request's size, as Kafka 0.7's
// RequestKeys.
type RequestType int16

// The request types of Kafka 0.7.
const (
	RequestProduce      RequestType = 0
	RequestFetch        RequestType = 1
	RequestMultiFetch   RequestType = 2
	RequestMultiProduce RequestType = 3
	RequestOffsets      RequestType = 4
)

// String names the request type.
func (t RequestType) String() string {
	switch t {
	case RequestProduce:
		return "PRODUCE"
	case RequestFetch:
		return "FETCH"
	case RequestMultiFetch:
		return "MULTIFETCH"
	case RequestMultiProduce:
		return "MULTIPRODUCE"
	case RequestOffsets:
		return "OFFSETS"
	}
	if s, ok := replicationName(t); ok {
		return s
	}
	return fmt.Sprintf("RequestType(%d)", int16(t))
}

// Frame widths.
const (
	RequestHeaderLen  = 4 + 2 // size, type
	ResponseHeaderLen = 4 + 2 // size, error
)

// Special times of an OFFSETS request.
const (
	LatestTime   int64 = -1
	EarliestTime int64 = -2
)

// ErrMalformedRequest is wrapped by every request decoding error. It has no
// wire code: a broker closes the connection of a client that sends one.
var ErrMalformedRequest = errors.New("kafka: malformed request")

// ProduceRequest appends a message set to a partition (type 0). Partition -1
// lets the broker choose.
type ProduceRequest struct {
	Topic     string
	Partition Partition
	Messages  []byte
}

// FetchRequest asks for up to MaxSize bytes of a partition from Offset (type 1).
type FetchRequest struct {
	Topic     string
	Partition Partition
	Offset    Offset
	MaxSize   int32
}

// OffsetsRequest asks for up to MaxOffsets segment start offsets before Time
// (type 4); Time is a Unix time in milliseconds, LatestTime or EarliestTime.
type OffsetsRequest struct {
	Topic      string
	Partition  Partition
	Time       int64
	MaxOffsets int32
}

// Request is one decoded request: exactly one field is set, according to Type.
type Request struct {
	Type    RequestType
	Produce []ProduceRequest // PRODUCE (one) and MULTIPRODUCE
	Fetch   []FetchRequest   // FETCH (one) and MULTIFETCH
	Offsets *OffsetsRequest  // OFFSETS
}

// AppendString appends a Kafka short string.
func AppendString(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

func (r *ProduceRequest) appendBody(dst []byte) []byte {
	dst, sizePos := BeginProduce(dst, r.Topic, r.Partition)
	dst = append(dst, r.Messages...)
	EndProduce(dst, sizePos)
	return dst
}

func (r *FetchRequest) appendBody(dst []byte) []byte {
	dst = AppendString(dst, r.Topic)
	dst = binary.BigEndian.AppendUint32(dst, uint32(r.Partition))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.Offset))
	return binary.BigEndian.AppendUint32(dst, uint32(r.MaxSize))
}

// BeginRequest appends the size (left blank), type and, for MULTIPRODUCE and
// MULTIFETCH, the part count of a request frame, and returns where the frame
// starts. The caller appends the body and calls EndRequest. A producer builds
// a PRODUCE frame in place this way, without copying its message sets.
func BeginRequest(dst []byte, t RequestType, parts int) ([]byte, int) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(t))
	if t == RequestMultiProduce || t == RequestMultiFetch {
		dst = binary.BigEndian.AppendUint16(dst, uint16(parts))
	}
	return dst, start
}

// EndRequest fills in the size of the frame begun at start, which ends at
// the end of frame.
func EndRequest(frame []byte, start int) {
	binary.BigEndian.PutUint32(frame[start:], uint32(len(frame)-start-4))
}

// BeginProduce appends the topic and partition of a PRODUCE body and its set
// size (left blank), and returns where the set size goes. The caller appends
// the message set and calls EndProduce.
func BeginProduce(dst []byte, topic string, partition Partition) ([]byte, int) {
	dst = AppendString(dst, topic)
	dst = binary.BigEndian.AppendUint32(dst, uint32(partition))
	return append(dst, 0, 0, 0, 0), len(dst)
}

// EndProduce fills in the set size of the PRODUCE body whose size goes at
// sizePos and whose set ends at the end of body.
func EndProduce(body []byte, sizePos int) {
	binary.BigEndian.PutUint32(body[sizePos:], uint32(len(body)-sizePos-4))
}

// AppendRequest appends the whole frame (size, type, body) of r.
func AppendRequest(dst []byte, r *Request) []byte {
	n := 0
	switch r.Type {
	case RequestMultiProduce:
		n = len(r.Produce)
	case RequestMultiFetch:
		n = len(r.Fetch)
	}
	dst, start := BeginRequest(dst, r.Type, n)
	switch r.Type {
	case RequestProduce:
		dst = r.Produce[0].appendBody(dst)
	case RequestMultiProduce:
		for i := range r.Produce {
			dst = r.Produce[i].appendBody(dst)
		}
	case RequestFetch:
		dst = r.Fetch[0].appendBody(dst)
	case RequestMultiFetch:
		for i := range r.Fetch {
			dst = r.Fetch[i].appendBody(dst)
		}
	case RequestOffsets:
		o := r.Offsets
		dst = AppendString(dst, o.Topic)
		dst = binary.BigEndian.AppendUint32(dst, uint32(o.Partition))
		dst = binary.BigEndian.AppendUint64(dst, uint64(o.Time))
		dst = binary.BigEndian.AppendUint32(dst, uint32(o.MaxOffsets))
	}
	EndRequest(dst, start)
	return dst
}

// decoder reads big-endian fields from a frame, remembering the first error.
type decoder struct {
	b   []byte
	pos int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: at byte %d: %s", ErrMalformedRequest, d.pos, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.pos {
		d.fail("%s needs %d bytes, %d remain", what, n, len(d.b)-d.pos)
		return nil
	}
	p := d.b[d.pos : d.pos+n]
	d.pos += n
	return p
}

func (d *decoder) int16(what string) int16 {
	if p := d.take(2, what); p != nil {
		return int16(binary.BigEndian.Uint16(p))
	}
	return 0
}

func (d *decoder) int32(what string) int32 {
	if p := d.take(4, what); p != nil {
		return int32(binary.BigEndian.Uint32(p))
	}
	return 0
}

func (d *decoder) int64(what string) int64 {
	if p := d.take(8, what); p != nil {
		return int64(binary.BigEndian.Uint64(p))
	}
	return 0
}

func (d *decoder) string(what string) string {
	n := d.int16(what + " length")
	if n < 0 {
		d.fail("%s length %d is negative", what, n)
		return ""
	}
	p := d.take(int(n), what)
	if p != nil && !utf8.Valid(p) {
		d.fail("%s is not UTF-8", what)
	}
	return string(p)
}

func (d *decoder) produce() ProduceRequest {
	r := ProduceRequest{Topic: d.string("topic"), Partition: Partition(d.int32("partition"))}
	size := d.int32("message set size")
	if size < 0 {
		d.fail("message set size %d is negative", size)
	}
	r.Messages = d.take(int(size), "message set")
	return r
}

func (d *decoder) fetch() FetchRequest {
	return FetchRequest{Topic: d.string("topic"), Partition: Partition(d.int32("partition")),
		Offset: Offset(d.int64("offset")), MaxSize: d.int32("max size")}
}

func (d *decoder) count() int {
	n := d.int16("count")
	if n < 0 {
		d.fail("count %d is negative", n)
	}
	return int(n)
}

// DecodeRequest decodes a request frame without its size prefix (type and
// body). The produced requests' message sets alias frame. Every length is
// checked against the frame, and trailing bytes are an error.
func DecodeRequest(frame []byte) (*Request, error) {
	d := &decoder{b: frame}
	r := &Request{Type: RequestType(d.int16("request type"))}
	switch r.Type {
	case RequestProduce:
		r.Produce = []ProduceRequest{d.produce()}
	case RequestMultiProduce:
		n := d.count()
		for i := 0; i < n && d.err == nil; i++ {
			r.Produce = append(r.Produce, d.produce())
		}
	case RequestFetch:
		r.Fetch = []FetchRequest{d.fetch()}
	case RequestMultiFetch:
		n := d.count()
		for i := 0; i < n && d.err == nil; i++ {
			r.Fetch = append(r.Fetch, d.fetch())
		}
	case RequestOffsets:
		r.Offsets = &OffsetsRequest{Topic: d.string("topic"), Partition: Partition(d.int32("partition")),
			Time: d.int64("time"), MaxOffsets: d.int32("max offsets")}
	default:
		if d.err == nil {
			return nil, fmt.Errorf("%w: unknown request type %d", ErrMalformedRequest, int16(r.Type))
		}
	}
	if d.err == nil && d.pos != len(frame) {
		d.fail("%d trailing bytes after the %v body", len(frame)-d.pos, r.Type)
	}
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}

// AppendResponseHeader appends a response's size and error code for a body
// of bodyLen bytes that the caller sends next.
func AppendResponseHeader(dst []byte, code ErrorCode, bodyLen int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(2+bodyLen))
	return binary.BigEndian.AppendUint16(dst, uint16(code))
}

// AppendOffsetsResponse appends a whole OFFSETS response frame.
func AppendOffsetsResponse(dst []byte, offsets []Offset) []byte {
	dst = AppendResponseHeader(dst, CodeNone, 4+8*len(offsets))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(offsets)))
	for _, o := range offsets {
		dst = binary.BigEndian.AppendUint64(dst, uint64(o))
	}
	return dst
}

// DecodeOffsetsResponse decodes an OFFSETS response body (after the error code).
func DecodeOffsetsResponse(body []byte) ([]Offset, error) {
	d := &decoder{b: body}
	n := d.int32("offset count")
	if n < 0 || int64(n)*8 != int64(len(body)-d.pos) {
		return nil, fmt.Errorf("%w: offsets response holds %d bytes for %d offsets", ErrMalformedRequest, len(body)-4, n)
	}
	out := make([]Offset, n)
	for i := range out {
		out[i] = Offset(d.int64("offset"))
	}
	return out, d.err
}

// FetchResult is one part of a MULTIFETCH response.
type FetchResult struct {
	Code     ErrorCode
	Messages []byte
}

// DecodeMultiFetchResponse splits a MULTIFETCH response body (after the
// top-level error code) into its parts; Messages alias body.
func DecodeMultiFetchResponse(body []byte) ([]FetchResult, error) {
	d := &decoder{b: body}
	var out []FetchResult
	for d.err == nil && d.pos < len(body) {
		size := d.int32("part size")
		if size < 2 {
			d.fail("part size %d is smaller than its error code", size)
			break
		}
		code := ErrorCode(d.int16("part error"))
		out = append(out, FetchResult{Code: code, Messages: d.take(int(size)-2, "part messages")})
	}
	return out, d.err
}
