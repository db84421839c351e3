package producer

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/netdb11/kafka/broker/wire"
)

func TestCompressionMatchesWire(t *testing.T) {
	random := make([]byte, 100<<10)
	for i := range random {
		random[i] = byte(i*7919 ^ i>>3)
	}
	for _, codec := range []wire.Codec{wire.CodecGzip, wire.CodecSnappy} {
		for _, inner := range [][]byte{
			wire.NewMessageSet([]byte("a")),
			wire.NewMessageSet([]byte(strings.Repeat("abc", 5000)), []byte("x"), nil),
			wire.NewMessageSet(random), // several snappy blocks
			nil,
		} {
			want, err := wire.AppendCompressed([]byte("prefix"), codec, inner)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 { // pooled and reused buffers give the same bytes every time
				f := &frameBuf{b: []byte("prefix")}
				if err := f.appendSet(codec, inner, 1<<20); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(f.b, want) {
					t.Fatalf("%v: producer gave %d bytes, wire %d", codec, len(f.b), len(want))
				}
			}
		}
		f := &frameBuf{b: []byte("p")}
		if err := f.appendSet(codec, wire.NewMessageSet(bytes.Repeat([]byte{1}, 100)), 10); err == nil || string(f.b) != "p" {
			t.Errorf("%v: oversized compressed set: err %v, frame %q", codec, err, f.b)
		}
	}
}

// FuzzFrame builds PRODUCE and MULTIPRODUCE frames from arbitrary payloads
// and checks that wire.DecodeRequest and a consumer's iterator give the
// same payloads back.
func FuzzFrame(f *testing.F) {
	f.Add([]byte("a\x00bb\x00"), "topic", byte(0), int32(-1))
	f.Add([]byte(strings.Repeat("x", 100)), "t", byte(1), int32(3))
	f.Add([]byte("\x00\x00"), "é", byte(2), int32(0))
	f.Fuzz(func(t *testing.T, data []byte, topic string, codec byte, partition int32) {
		if len(topic) > 1000 || !utf8.ValidString(topic) {
			return // Send refuses such topics before building a frame
		}
		c := wire.Codec(codec % 3)
		payloads := bytes.Split(data, []byte{0})
		var inner []byte
		for _, p := range payloads {
			inner = wire.AppendMessage(inner, p)
		}
		for _, typ := range []wire.RequestType{wire.RequestProduce, wire.RequestMultiProduce} {
			parts := 1
			if typ == wire.RequestMultiProduce {
				parts = 2
			}
			fb := getFrame()
			fb.begin(typ, parts)
			for range parts {
				pos := fb.beginPart(topic, wire.Partition(partition))
				if err := fb.appendSet(c, inner, 1<<30); err != nil {
					t.Fatal(err)
				}
				fb.endPart(pos)
			}
			frame := fb.end()
			req, err := wire.DecodeRequest(frame[4:])
			if err != nil {
				t.Fatalf("%v frame does not decode: %v", typ, err)
			}
			if req.Type != typ || len(req.Produce) != parts {
				t.Fatalf("decoded %v with %d parts, want %v with %d", req.Type, len(req.Produce), typ, parts)
			}
			for _, pr := range req.Produce {
				if pr.Topic != topic || pr.Partition != wire.Partition(partition) {
					t.Fatalf("decoded %q/%d, want %q/%d", pr.Topic, pr.Partition, topic, partition)
				}
				it := wire.NewDeepIterator(pr.Messages, 0)
				i := 0
				for it.Next() {
					if i >= len(payloads) || !bytes.Equal(it.Message().Payload, payloads[i]) {
						t.Fatalf("message %d differs", i)
					}
					i++
				}
				if it.Err() != nil || i != len(payloads) {
					t.Fatalf("got %d of %d messages, err %v", i, len(payloads), it.Err())
				}
			}
			putFrame(fb)
		}
	})
}

// benchEncode builds the PRODUCE frame of 50 200-byte messages with codec,
// as a synchronous Send does.
func benchEncode(b *testing.B, codec wire.Codec) {
	msgs := make([][]byte, 50)
	for i := range msgs {
		msgs[i] = make([]byte, 200)
		for j := range msgs[i] {
			msgs[i][j] = byte('a' + (i+j)%26)
		}
	}
	b.SetBytes(50 * 200)
	b.ReportAllocs()
	for b.Loop() {
		f := getFrame()
		f.begin(wire.RequestProduce, 1)
		pos := f.beginPart("perf", 0)
		f.inner = f.inner[:0]
		for _, m := range msgs {
			f.inner = wire.AppendMessage(f.inner, m)
		}
		if err := f.appendSet(codec, f.inner, wire.DefaultMaxMessageSize); err != nil {
			b.Fatal(err)
		}
		f.endPart(pos)
		f.end()
		putFrame(f)
	}
}

func BenchmarkEncodeBatch50None(b *testing.B)   { benchEncode(b, wire.CodecNone) }
func BenchmarkEncodeBatch50Gzip(b *testing.B)   { benchEncode(b, wire.CodecGzip) }
func BenchmarkEncodeBatch50Snappy(b *testing.B) { benchEncode(b, wire.CodecSnappy) }
