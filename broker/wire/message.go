package wire

import (
	"encoding/binary"
	"fmt"
)

// Offset is a byte position in a partition's log. Paper §3.1: a message has
// no id; it is addressed by its offset, and the next message's offset is
// offset + 4 + size.
type Offset int64

// Byte widths and magic values of the message format.
const (
	SizeLen       = 4 // the int32 size prefix of a message
	MagicLen      = 1
	AttributesLen = 1
	CRCLen        = 4

	MagicV0 byte = 0 // size | magic | crc | payload
	MagicV1 byte = 1 // size | magic | attributes | crc | payload

	// HeaderLenV0 is the size of a magic-0 message without its payload, not
	// counting the size prefix; HeaderLenV1 likewise for magic 1.
	HeaderLenV0 = MagicLen + CRCLen
	HeaderLenV1 = MagicLen + AttributesLen + CRCLen

	// Overhead is the per-message cost of an uncompressed message on disk
	// and on the wire: 9 bytes, the paper's figure.
	Overhead = SizeLen + HeaderLenV0

	// CodecMask selects the codec bits of the attributes byte.
	CodecMask byte = 0x03

	// DefaultMaxMessageSize is max.message.size's default in Kafka 0.7, for
	// the broker and the producer alike.
	DefaultMaxMessageSize = 1000000
)

// OverMaxSize reports whether a message whose size field is size breaks the
// limit maxSize (max.message.size; 0 or less: no limit). It is the one rule
// of the limit: it bounds the size field (header after the size prefix plus
// payload), not the payload's length. The broker applies it to every message
// of a produced set and the producer to every message it builds (a
// compressed set's wrapper included), so the two agree to the byte.
func OverMaxSize(size int64, maxSize int) bool { return maxSize > 0 && size > int64(maxSize) }

// Codec is a compression codec, stored in the low two bits of attributes.
type Codec int8

// The codecs of Kafka 0.7 (compression.codec).
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
)

// String names the codec as Kafka's configuration does.
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// Message is one decoded message. Payload aliases the bytes it was decoded
// from.
type Message struct {
	Magic      byte
	Attributes byte
	CRC        uint32
	Payload    []byte
}

// Codec returns the compression codec of the message.
func (m Message) Codec() Codec { return Codec(m.Attributes & CodecMask) }

// Size returns the message's size field: its length without the size prefix.
func (m Message) Size() int {
	if m.Magic == MagicV0 {
		return HeaderLenV0 + len(m.Payload)
	}
	return HeaderLenV1 + len(m.Payload)
}

// AppendMessage appends an uncompressed magic-0 message holding payload.
func AppendMessage(dst, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(HeaderLenV0+len(payload)))
	dst = append(dst, MagicV0)
	dst = binary.BigEndian.AppendUint32(dst, Checksum(payload))
	return append(dst, payload...)
}

// AppendMessageV1 appends a magic-1 message with the given attributes.
func AppendMessageV1(dst []byte, attributes byte, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(HeaderLenV1+len(payload)))
	dst = append(dst, MagicV1, attributes)
	dst = binary.BigEndian.AppendUint32(dst, Checksum(payload))
	return append(dst, payload...)
}

// NewMessageSet encodes payloads as uncompressed messages laid end to end.
func NewMessageSet(payloads ...[]byte) []byte {
	n := 0
	for _, p := range payloads {
		n += Overhead + len(p)
	}
	set := make([]byte, 0, n)
	for _, p := range payloads {
		set = AppendMessage(set, p)
	}
	return set
}

// decodeAt decodes the message whose size prefix starts at b[0]. It returns
// the message and its total length (prefix included); need > 0 reports that b
// holds only a prefix of a message that is need bytes long. reason is set when
// the bytes can never be a valid message. maxSize, when positive, bounds the
// size field.
func decodeAt(b []byte, maxSize int) (m Message, total, need int, reason string) {
	if len(b) < SizeLen {
		return m, 0, SizeLen, ""
	}
	size := int64(int32(binary.BigEndian.Uint32(b)))
	switch {
	case size < HeaderLenV0:
		return m, 0, 0, fmt.Sprintf("size %d is smaller than a message header", size)
	case OverMaxSize(size, maxSize):
		return m, 0, 0, fmt.Sprintf("size %d exceeds the maximum message size %d", size, maxSize)
	}
	total = SizeLen + int(size)
	if len(b) < total {
		return m, 0, total, ""
	}
	m.Magic = b[SizeLen]
	body := b[SizeLen+MagicLen : total]
	switch m.Magic {
	case MagicV0:
	case MagicV1:
		if size < HeaderLenV1 {
			return m, 0, 0, fmt.Sprintf("size %d is smaller than a magic 1 header", size)
		}
		m.Attributes = body[0]
		body = body[AttributesLen:]
		if c := m.Codec(); c > CodecSnappy {
			return m, 0, 0, fmt.Sprintf("unknown compression codec %d", c)
		}
	default:
		return m, 0, 0, fmt.Sprintf("unknown magic %d", m.Magic)
	}
	m.CRC = binary.BigEndian.Uint32(body)
	m.Payload = body[CRCLen:]
	if got := Checksum(m.Payload); got != m.CRC {
		return m, 0, 0, fmt.Sprintf("crc mismatch: stored %08x, computed %08x", m.CRC, got)
	}
	return m, total, 0, ""
}
