package wire

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzIterator feeds arbitrary bytes to the message-set decoders. They must
// never panic, must agree with each other, and every message they yield must
// re-encode to the bytes it was read from.
func FuzzIterator(f *testing.F) {
	set := NewMessageSet([]byte("a"), []byte("hello"), make([]byte, 200))
	f.Add(set)
	f.Add(set[:len(set)-3])
	gz, _ := AppendCompressed(nil, CodecGzip, set)
	sn, _ := AppendCompressed(nil, CodecSnappy, set)
	f.Add(append(gz, sn...))
	f.Add(AppendMessageV1(nil, 0, []byte("v1")))
	f.Fuzz(func(t *testing.T, b []byte) {
		it := NewIterator(b, 0)
		it.SetMaxMessageSize(1 << 16)
		var re []byte
		for it.Next() {
			m := it.Message()
			if m.Magic == MagicV0 {
				re = AppendMessage(re, m.Payload)
			} else {
				re = AppendMessageV1(re, m.Attributes, m.Payload)
			}
			if int(it.NextOffset()) != len(re) {
				t.Fatalf("next offset %d after %d bytes", it.NextOffset(), len(re))
			}
		}
		if !bytes.Equal(re, b[:it.ValidBytes()]) {
			t.Fatal("valid prefix does not re-encode to itself")
		}
		if it.Err() != nil && !errors.Is(it.Err(), ErrInvalidMessage) {
			t.Fatalf("unexpected error type %v", it.Err())
		}
		n, err := Validate(b, 1<<16)
		if (err == nil) != (it.Err() == nil && it.ValidBytes() == len(b)) {
			t.Fatalf("Validate disagrees: %d, %v", n, err)
		}
		d := NewDeepIterator(b, 0)
		for d.Next() {
		}
	})
}

// FuzzDecodeRequest feeds arbitrary frames to the request decoder: no panic,
// and whatever decodes re-encodes to the same frame.
func FuzzDecodeRequest(f *testing.F) {
	for _, r := range sampleRequests() {
		f.Add(AppendRequest(nil, r)[4:])
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		r, err := DecodeRequest(frame)
		if err != nil {
			if !errors.Is(err, ErrMalformedRequest) {
				t.Fatalf("unexpected error type %v", err)
			}
			return
		}
		if re := AppendRequest(nil, r); !bytes.Equal(re[4:], frame) {
			t.Fatalf("re-encoding differs:\n% x\n% x", re[4:], frame)
		}
	})
}

// FuzzDecompress feeds arbitrary payloads to both codecs under a limit.
func FuzzDecompress(f *testing.F) {
	set := NewMessageSet([]byte("abc"), []byte("defgh"))
	for _, c := range []Codec{CodecGzip, CodecSnappy} {
		p, _ := Compress(c, set)
		f.Add(byte(c), p)
	}
	f.Fuzz(func(t *testing.T, codec byte, payload []byte) {
		out, err := Decompress(Codec(codec&CodecMask), payload, 1<<16)
		if err == nil && len(out) > 1<<16 {
			t.Fatalf("limit exceeded: %d bytes", len(out))
		}
	})
}
