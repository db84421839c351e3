package wire

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/golang/snappy"
)

// xerialHeader opens a snappy stream as written by snappy-java's
// SnappyOutputStream, which Kafka 0.7 uses: magic, version 1, compatible 1.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}

// xerialBlock is snappy-java's default block size.
const xerialBlock = 32 * 1024

// ErrTooLarge is returned when a compressed message expands beyond the limit
// its reader set.
var ErrTooLarge = errors.New("kafka: decompressed message set exceeds limit")

// Compress compresses an inner message set with codec, in the stream format
// Kafka 0.7 writes (gzip; snappy-java's framed snappy).
func Compress(codec Codec, set []byte) ([]byte, error) { return appendStream(nil, codec, set) }

// appendStream appends set compressed with codec, in the stream format Kafka
// 0.7 writes: gzip at the default level (as Java's GZIPOutputStream), or
// snappy-java's framing (xerialHeader, then blocks of at most xerialBlock
// input bytes, each compressed and preceded by its length as an int32). It
// compresses straight into dst, with a pooled gzip compressor.
func appendStream(dst []byte, codec Codec, set []byte) ([]byte, error) {
	switch codec {
	case CodecGzip:
		z := gzipPool.Get().(*gzipEncoder)
		z.out = dst
		z.w.Reset(z)
		_, err := z.w.Write(set)
		if cerr := z.w.Close(); err == nil {
			err = cerr
		}
		dst, z.out = z.out, nil
		gzipPool.Put(z)
		return dst, err
	case CodecSnappy:
		dst = append(dst, xerialHeader...)
		for len(set) > 0 {
			n := min(len(set), xerialBlock)
			pos := len(dst)
			need := 4 + snappy.MaxEncodedLen(n)
			dst = slices.Grow(dst, need)[:pos+need]
			block := snappy.Encode(dst[pos+4:], set[:n])
			binary.BigEndian.PutUint32(dst[pos:], uint32(len(block)))
			dst = dst[:pos+4+len(block)]
			set = set[n:]
		}
		return dst, nil
	}
	return dst, fmt.Errorf("kafka: cannot compress with %v", codec)
}

// gzipEncoder is a pooled gzip compressor that appends to out. A new
// compressor allocates and clears about a megabyte, which costs more than
// compressing a batch of small messages.
type gzipEncoder struct {
	w   *gzip.Writer
	out []byte
}

func (z *gzipEncoder) Write(p []byte) (int, error) {
	z.out = append(z.out, p...)
	return len(p), nil
}

var gzipPool = sync.Pool{New: func() any {
	z := &gzipEncoder{}
	z.w = gzip.NewWriter(z)
	return z
}}

// Decompress expands the payload of a compressed message into the inner
// message set, refusing to produce more than limit bytes.
func Decompress(codec Codec, payload []byte, limit int) ([]byte, error) {
	switch codec {
	case CodecGzip:
		r, err := gzip.NewReader(bytes.NewReader(payload))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrInvalidMessage, err)
		}
		out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrInvalidMessage, err)
		}
		if len(out) > limit {
			return nil, ErrTooLarge
		}
		return out, nil
	case CodecSnappy:
		if !bytes.HasPrefix(payload, xerialHeader[:8]) {
			return snappyBlock(nil, payload, limit)
		}
		if len(payload) < len(xerialHeader) {
			return nil, fmt.Errorf("%w: snappy: short stream header", ErrInvalidMessage)
		}
		var out []byte
		for p := payload[len(xerialHeader):]; len(p) > 0; {
			if len(p) < 4 {
				return nil, fmt.Errorf("%w: snappy: truncated block length", ErrInvalidMessage)
			}
			n := int64(binary.BigEndian.Uint32(p))
			if n > int64(len(p)-4) {
				return nil, fmt.Errorf("%w: snappy: block of %d bytes, %d remain", ErrInvalidMessage, n, len(p)-4)
			}
			var err error
			if out, err = snappyBlock(out, p[4:4+n], limit); err != nil {
				return nil, err
			}
			p = p[4+n:]
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: unknown codec %d", ErrInvalidMessage, codec)
}

// snappyBlock appends one decoded snappy block to out, within limit.
func snappyBlock(out, block []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrInvalidMessage, err)
	}
	if n > limit-len(out) {
		return nil, ErrTooLarge
	}
	dec, err := snappy.Decode(make([]byte, n), block)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrInvalidMessage, err)
	}
	return append(out, dec...), nil
}

// CompressedHeaderLen is what precedes a compressed message's payload: the
// size prefix and the magic-1 header.
const CompressedHeaderLen = SizeLen + HeaderLenV1

// AppendCompressed compresses the inner message set and appends it as one
// magic-1 message carrying the codec (CodecNone appends inner as it is). As
// in Kafka 0.7 (the paper does not describe compression), the broker stores
// and serves such a message as it is. It compresses straight into dst, so a
// caller that reuses dst allocates nothing; on error dst is returned as it
// was. This is the one encoder of compressed sets: producers and tests use it.
func AppendCompressed(dst []byte, codec Codec, inner []byte) ([]byte, error) {
	if codec == CodecNone {
		return append(dst, inner...), nil
	}
	start := len(dst)
	dst = append(dst, make([]byte, CompressedHeaderLen)...)
	dst, err := appendStream(dst, codec, inner)
	if err != nil {
		return dst[:start], err
	}
	payload := dst[start+CompressedHeaderLen:]
	h := dst[start:]
	binary.BigEndian.PutUint32(h, uint32(HeaderLenV1+len(payload)))
	h[SizeLen] = MagicV1
	h[SizeLen+MagicLen] = byte(codec) & CodecMask
	binary.BigEndian.PutUint32(h[SizeLen+MagicLen+AttributesLen:], Checksum(payload))
	return dst, nil
}

// DefaultDecompressLimit bounds the size of one decompressed message set.
const DefaultDecompressLimit = 64 << 20

// DeepIterator walks a message set as a consumer sees it: a compressed
// message is replaced by the messages it holds. As in Kafka 0.7, every inner
// message but the last reports the wrapper's own offset as its next offset (a
// consumer that stops there refetches the wrapper), and the last reports the
// offset after the wrapper.
type DeepIterator struct {
	outer *Iterator
	inner *Iterator
	limit int

	cur  Message
	next Offset
	err  error
}

// NewDeepIterator returns a deep iterator over set, based at offset base.
func NewDeepIterator(set []byte, base Offset) *DeepIterator {
	return &DeepIterator{outer: NewIterator(set, base), limit: DefaultDecompressLimit}
}

// Next advances to the next message, expanding compressed ones.
func (d *DeepIterator) Next() bool {
	for {
		if d.err != nil {
			return false
		}
		if d.inner != nil {
			if d.inner.Next() {
				d.cur = d.inner.Message()
				if d.inner.ValidBytes() == len(d.inner.set) {
					d.next = d.outer.NextOffset()
				} else {
					d.next = d.outer.Offset()
				}
				return true
			}
			if err := d.inner.Err(); err != nil {
				d.err = fmt.Errorf("in compressed message at offset %d: %w", d.outer.Offset(), err)
				return false
			}
			if _, partial := d.inner.Partial(); partial {
				d.err = &CorruptError{Pos: d.outer.Offset(), Reason: "compressed message set ends mid-message"}
				return false
			}
			d.inner = nil
		}
		if !d.outer.Next() {
			d.err = d.outer.Err()
			return false
		}
		m := d.outer.Message()
		if m.Codec() == CodecNone {
			d.cur, d.next = m, d.outer.NextOffset()
			return true
		}
		set, err := Decompress(m.Codec(), m.Payload, d.limit)
		if err != nil {
			d.err = &CorruptError{Pos: d.outer.Offset(), Reason: err.Error()}
			return false
		}
		d.inner = NewIterator(set, 0)
	}
}

// Message returns the current (inner) message.
func (d *DeepIterator) Message() Message { return d.cur }

// NextOffset returns the offset to fetch from to continue after the current
// message.
func (d *DeepIterator) NextOffset() Offset { return d.next }

// Err returns the error that stopped the iteration, or nil.
func (d *DeepIterator) Err() error { return d.err }

// Partial reports an incomplete trailing message in the outer set, as
// Iterator.Partial does.
func (d *DeepIterator) Partial() (need int, ok bool) { return d.outer.Partial() }

// ValidBytes returns the length of the complete outer messages read so far.
func (d *DeepIterator) ValidBytes() int { return d.outer.ValidBytes() }
