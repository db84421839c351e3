package producer

import (
	"fmt"
	"sync"

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
	f.b, _ = wire.BeginRequest(f.b[:0], t, count)
}

// end patches the frame's size.
func (f *frameBuf) end() []byte {
	wire.EndRequest(f.b, 0)
	return f.b
}

// beginPart starts a PRODUCE body and returns where its set size goes.
func (f *frameBuf) beginPart(topic string, partition wire.Partition) int {
	var pos int
	f.b, pos = wire.BeginProduce(f.b, topic, partition)
	return pos
}

// endPart patches the set size of the body begun at sizePos.
func (f *frameBuf) endPart(sizePos int) { wire.EndProduce(f.b, sizePos) }

// appendSet appends a message set holding inner, an encoded uncompressed
// set, compressed with codec when codec is not none (wire.AppendCompressed,
// straight into the frame). As in Kafka 0.7 (the paper does not describe
// compression), the compressed set travels as the payload of one message,
// which the broker stores as it is.
func (f *frameBuf) appendSet(codec wire.Codec, inner []byte, maxMessageSize int) error {
	switch codec {
	case wire.CodecNone:
		f.b = append(f.b, inner...)
		return nil
	case wire.CodecGzip, wire.CodecSnappy:
	default:
		return fmt.Errorf("producer: unknown compression codec %d", codec)
	}
	start := len(f.b)
	b, err := wire.AppendCompressed(f.b, codec, inner)
	if err != nil {
		f.b = b[:start]
		return fmt.Errorf("producer: %v compression: %w", codec, err)
	}
	if size := int64(len(b) - start - wire.SizeLen); wire.OverMaxSize(size, maxMessageSize) {
		f.b = b[:start]
		return fmt.Errorf("%w: compressed set of %d bytes, a message size of %d; max.message.size is %d",
			ErrMessageTooLarge, size-wire.HeaderLenV1, size, maxMessageSize)
	}
	f.b = b
	return nil
}
