package producer

import (
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/golang/snappy"
	"github.com/netdb11/kafka/broker/wire"
)

// frameBuf builds one request frame in place (see wire's doc.go for the
// layout): the size is patched in when the frame ends, a PRODUCE body's set
// size when its set ends. Buffers are pooled, so building a request allocates
// nothing once the pool is warm.
type frameBuf struct {
	b     []byte
	inner []byte // scratch for a set about to be compressed
	sel   []int  // scratch: the entry chosen for each message of a Send
	ents  []int  // scratch: the entries of one broker
}

var framePool = sync.Pool{New: func() any { return &frameBuf{b: make([]byte, 0, 64<<10)} }}

func getFrame() *frameBuf { return framePool.Get().(*frameBuf) }

// maxPooledFrame keeps a rare huge request from pinning its memory.
const maxPooledFrame = 4 << 20

func putFrame(f *frameBuf) {
	if cap(f.b) > maxPooledFrame || cap(f.inner) > maxPooledFrame {
		return
	}
	framePool.Put(f)
}

// begin starts a frame of type t; for MULTIPRODUCE, count parts follow.
func (f *frameBuf) begin(t wire.RequestType, count int) {
	f.b = append(f.b[:0], 0, 0, 0, 0)
	f.b = binary.BigEndian.AppendUint16(f.b, uint16(t))
	if t == wire.RequestMultiProduce {
		f.b = binary.BigEndian.AppendUint16(f.b, uint16(count))
	}
}

// end patches the frame's size.
func (f *frameBuf) end() []byte {
	binary.BigEndian.PutUint32(f.b, uint32(len(f.b)-4))
	return f.b
}

// beginPart starts a PRODUCE body and returns where its set size goes.
func (f *frameBuf) beginPart(topic string, partition wire.Partition) int {
	f.b = wire.AppendString(f.b, topic)
	f.b = binary.BigEndian.AppendUint32(f.b, uint32(partition))
	f.b = append(f.b, 0, 0, 0, 0)
	return len(f.b) - 4
}

// endPart patches the set size of the body begun at sizePos.
func (f *frameBuf) endPart(sizePos int) {
	binary.BigEndian.PutUint32(f.b[sizePos:], uint32(len(f.b)-sizePos-4))
}

// appendSet appends a message set holding inner, an encoded uncompressed
// set, compressed with codec when codec is not none. As in Kafka 0.7 (the
// paper does not describe compression), the compressed set travels as the
// payload of one message, which the broker stores as it is.
func (f *frameBuf) appendSet(codec wire.Codec, inner []byte, maxMessageSize int) error {
	switch codec {
	case wire.CodecNone:
		f.b = append(f.b, inner...)
		return nil
	case wire.CodecGzip:
		return f.appendGzip(inner, maxMessageSize)
	case wire.CodecSnappy:
		return f.appendSnappy(inner, maxMessageSize)
	}
	return fmt.Errorf("producer: unknown compression codec %d", codec)
}

// gzipPool recycles gzip compressors: a new one allocates and clears about
// a megabyte, which costs more than compressing a batch of small messages.
var gzipPool = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// frameWriter appends to a frame.
type frameWriter frameBuf

func (w *frameWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// wrapperHeaderLen is the size, magic, attributes and CRC before a
// compressed message's payload.
const wrapperHeaderLen = wire.SizeLen + wire.HeaderLenV1

// beginWrapper reserves the header of a magic-1 message; the compressed
// payload is then appended to f.b and endWrapper fills the header in.
func (f *frameBuf) beginWrapper() int {
	start := len(f.b)
	f.b = append(f.b, make([]byte, wrapperHeaderLen)...)
	return start
}

// endWrapper completes the message begun at start, or removes it when err
// is set or the payload exceeds max.message.size.
func (f *frameBuf) endWrapper(start int, codec wire.Codec, maxMessageSize int, err error) error {
	payload := f.b[start+wrapperHeaderLen:]
	switch {
	case err != nil:
		err = fmt.Errorf("producer: %v compression: %w", codec, err)
	case len(payload) > maxMessageSize:
		err = fmt.Errorf("%w: compressed set of %d bytes, max.message.size is %d", ErrMessageTooLarge, len(payload), maxMessageSize)
	}
	if err != nil {
		f.b = f.b[:start]
		return err
	}
	h := f.b[start:]
	binary.BigEndian.PutUint32(h, uint32(wire.HeaderLenV1+len(payload)))
	h[wire.SizeLen] = wire.MagicV1
	h[wire.SizeLen+wire.MagicLen] = byte(codec) & wire.CodecMask
	binary.BigEndian.PutUint32(h[wire.SizeLen+wire.MagicLen+wire.AttributesLen:], wire.Checksum(payload))
	return nil
}

// appendGzip appends a magic-1 message whose payload is inner compressed
// with gzip at the default level (as Java's GZIPOutputStream, which 0.7
// uses), compressing straight into the frame with a pooled compressor. The
// bytes are those of wire.AppendCompressed(dst, wire.CodecGzip, inner).
func (f *frameBuf) appendGzip(inner []byte, maxMessageSize int) error {
	start := f.beginWrapper()
	w := gzipPool.Get().(*gzip.Writer)
	w.Reset((*frameWriter)(f))
	_, err := w.Write(inner)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	gzipPool.Put(w)
	return f.endWrapper(start, wire.CodecGzip, maxMessageSize, err)
}

// xerialHeader and xerialBlock are snappy-java's stream framing, which 0.7
// uses for snappy: this header, then blocks of at most 32 KiB of input, each
// compressed and preceded by its length (int32). wire.Compress writes the
// same stream; a test checks that the bytes agree.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}

const xerialBlock = 32 << 10

// appendSnappy appends a magic-1 message whose payload is inner in
// snappy-java's framing, encoding each block straight into the frame. The
// bytes are those of wire.AppendCompressed(dst, wire.CodecSnappy, inner).
func (f *frameBuf) appendSnappy(inner []byte, maxMessageSize int) error {
	start := f.beginWrapper()
	f.b = append(f.b, xerialHeader...)
	for len(inner) > 0 {
		n := min(len(inner), xerialBlock)
		pos := len(f.b)
		need := 4 + snappy.MaxEncodedLen(n)
		f.b = slices.Grow(f.b, need)[:pos+need]
		block := snappy.Encode(f.b[pos+4:], inner[:n])
		binary.BigEndian.PutUint32(f.b[pos:], uint32(len(block)))
		f.b = f.b[:pos+4+len(block)]
		inner = inner[n:]
	}
	return f.endWrapper(start, wire.CodecSnappy, maxMessageSize, nil)
}
