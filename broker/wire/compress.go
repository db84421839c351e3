package wire

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
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
// message set, refusing to produce more than limit bytes. The result is a new
// slice of about the right size (see DecompressedLen).
func Decompress(codec Codec, payload []byte, limit int) ([]byte, error) {
	return AppendDecompressed(make([]byte, 0, DecompressedLen(codec, payload, limit)), codec, payload, limit)
}

// maxDeflateRatio bounds how far deflate can expand its input (258 bytes
// from a 2-bit code, so about 1032 to 1): a size claimed beyond it is a lie.
const maxDeflateRatio = 1032

// DecompressedLen returns how many bytes payload decompresses to, read from
// the stream itself (snappy's block headers; the gzip trailer's ISIZE),
// clamped to [0, limit]: a hint for sizing the buffer given to
// AppendDecompressed, never trusted for anything else (the decoders check
// the real length). It is 0 when the stream does not say.
func DecompressedLen(codec Codec, payload []byte, limit int) int {
	n := 0
	switch codec {
	case CodecGzip:
		// RFC 1952: the last four bytes are the input size mod 2^32, little
		// endian (of the last member, if there are several).
		if len(payload) >= 18 {
			n = int(binary.LittleEndian.Uint32(payload[len(payload)-4:]))
			n = min(n, maxDeflateRatio*len(payload))
		}
	case CodecSnappy:
		if !bytes.HasPrefix(payload, xerialHeader[:8]) {
			n, _ = snappy.DecodedLen(payload)
			break
		}
		for p := payload[min(len(xerialHeader), len(payload)):]; len(p) >= 4 && n <= limit; {
			k := int64(binary.BigEndian.Uint32(p))
			if k > int64(len(p)-4) {
				break
			}
			if d, err := snappy.DecodedLen(p[4 : 4+k]); err == nil {
				n += d
			}
			p = p[4+k:]
		}
	}
	return max(0, min(n, limit))
}

// AppendDecompressed appends the payload of a compressed message, expanded,
// to dst and returns the extended slice; it refuses to produce more than
// limit bytes. It decompresses in place when dst has room (size it with
// DecompressedLen), with a pooled gzip reader, so a caller that reuses dst
// allocates nothing. On error dst's contents past its length are undefined.
func AppendDecompressed(dst []byte, codec Codec, payload []byte, limit int) ([]byte, error) {
	switch codec {
	case CodecGzip:
		return appendGunzip(dst, payload, limit)
	case CodecSnappy:
		if !bytes.HasPrefix(payload, xerialHeader[:8]) {
			return appendSnappyBlock(dst, payload, len(dst), limit)
		}
		if len(payload) < len(xerialHeader) {
			return nil, fmt.Errorf("%w: snappy: short stream header", ErrInvalidMessage)
		}
		start := len(dst)
		for p := payload[len(xerialHeader):]; len(p) > 0; {
			if len(p) < 4 {
				return nil, fmt.Errorf("%w: snappy: truncated block length", ErrInvalidMessage)
			}
			n := int64(binary.BigEndian.Uint32(p))
			if n > int64(len(p)-4) {
				return nil, fmt.Errorf("%w: snappy: block of %d bytes, %d remain", ErrInvalidMessage, n, len(p)-4)
			}
			var err error
			if dst, err = appendSnappyBlock(dst, p[4:4+n], start, limit); err != nil {
				return nil, err
			}
			p = p[4+n:]
		}
		return dst, nil
	}
	return nil, fmt.Errorf("%w: unknown codec %d", ErrInvalidMessage, codec)
}

// appendSnappyBlock decodes one snappy block straight into dst's spare
// capacity (growing it when short), within limit bytes counted from start.
func appendSnappyBlock(dst, block []byte, start, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrInvalidMessage, err)
	}
	if n > limit-(len(dst)-start) {
		return nil, ErrTooLarge
	}
	pos := len(dst)
	dst = slices.Grow(dst, n)[:pos+n]
	if _, err := snappy.Decode(dst[pos:], block); err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrInvalidMessage, err)
	}
	return dst, nil
}

var inflaterPool = sync.Pool{New: func() any { return newInflater() }}

// appendGunzip inflates a gzip stream (every member, each with its CRC-32
// and length checked) into dst's spare capacity, growing it only when the
// stream is longer than that room, within limit. See inflate.go.
func appendGunzip(dst, payload []byte, limit int) ([]byte, error) {
	f := inflaterPool.Get().(*inflater)
	defer inflaterPool.Put(f)
	out, err := f.gunzip(dst, payload, limit)
	if errors.Is(err, errInflate) {
		return nil, fmt.Errorf("%w: gzip: %v", ErrInvalidMessage, err)
	}
	return out, err
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
// message is replaced by the messages it holds, each CRC-checked like any
// other. As in Kafka 0.7, every inner message but the last reports the
// wrapper's own offset as its next offset (a consumer that stops there
// refetches the wrapper), and the last reports the offset after the wrapper.
//
// A compressed message is expanded once, into a buffer of the expanded size
// (SetAlloc lets the caller supply it, so that a consumer reuses one); the
// inner messages are then read in place, without a copy.
type DeepIterator struct {
	outer   Iterator
	inner   Iterator
	inInner bool // inner holds the current compressed message's set
	limit   int
	alloc   func(n int) []byte
	expand  func(at Offset, m Message) ([]byte, bool)

	cur  Message
	next Offset
	err  error
}

// NewDeepIterator returns a deep iterator over set, based at offset base.
func NewDeepIterator(set []byte, base Offset) *DeepIterator {
	d := new(DeepIterator)
	d.Reset(set, base)
	return d
}

// Reset makes d iterate set from offset base, as NewDeepIterator does; the
// function given to SetAlloc stays.
func (d *DeepIterator) Reset(set []byte, base Offset) {
	*d = DeepIterator{outer: Iterator{set: set, base: base}, limit: DefaultDecompressLimit, alloc: d.alloc, expand: d.expand}
}

// SetAlloc makes d expand each compressed message into alloc(n)'s spare
// capacity: alloc returns a slice of length 0 and capacity at least n (the
// expanded size the stream announces; when it lies, d grows the buffer
// itself). The inner messages' payloads alias that buffer, so they stay
// valid as long as the caller leaves it alone. Without alloc (or with nil),
// each compressed message gets a new buffer.
func (d *DeepIterator) SetAlloc(alloc func(n int) []byte) { d.alloc = alloc }

// SetExpanded lets the caller hand d compressed messages it expanded
// already (in another goroutine, say): for the compressed message m at
// offset at, expanded returns its inner set and true, or false to let d
// expand it. d reaches a message only after checking its CRC, so an
// expansion done before that check is used only for a message that passed
// it; a failed expansion is reported by returning false (d then expands the
// message itself and reports the error at the right place).
func (d *DeepIterator) SetExpanded(expanded func(at Offset, m Message) ([]byte, bool)) {
	d.expand = expanded
}

// Next advances to the next message, expanding compressed ones.
func (d *DeepIterator) Next() bool {
	for {
		if d.err != nil {
			return false
		}
		if d.inInner {
			if d.inner.Next() {
				d.cur = d.inner.cur
				if d.inner.pos == len(d.inner.set) {
					d.next = d.outer.NextOffset()
				} else {
					d.next = d.outer.off
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
			d.inInner = false
		}
		if !d.outer.Next() {
			d.err = d.outer.Err()
			return false
		}
		m := d.outer.cur
		codec := m.Codec()
		if codec == CodecNone {
			d.cur, d.next = m, d.outer.NextOffset()
			return true
		}
		if d.expand != nil {
			if set, ok := d.expand(d.outer.off, m); ok {
				d.inner = Iterator{set: set}
				d.inInner = true
				continue
			}
		}
		n := DecompressedLen(codec, m.Payload, d.limit)
		var buf []byte
		if d.alloc != nil {
			buf = d.alloc(n)[:0]
		} else {
			buf = make([]byte, 0, n)
		}
		set, err := AppendDecompressed(buf, codec, m.Payload, d.limit)
		if err != nil {
			d.err = &CorruptError{Pos: d.outer.Offset(), Reason: err.Error()}
			return false
		}
		d.inner = Iterator{set: set}
		d.inInner = true
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
