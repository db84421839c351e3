package wire

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/golang/snappy"
)

func logLines(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "2011-06-12 10:%02d:%02d GET /profile/view?id=%d HTTP/1.1 200 member=%d", i/60%60, i%60, i*7919%100000, i)
	}
	return out
}

func TestCompressRoundTrip(t *testing.T) {
	inner := NewMessageSet(logLines(2000)...) // spans several snappy blocks
	for _, codec := range []Codec{CodecGzip, CodecSnappy} {
		t.Run(codec.String(), func(t *testing.T) {
			c, err := Compress(codec, inner)
			if err != nil {
				t.Fatal(err)
			}
			if len(c) >= len(inner)/2 {
				t.Errorf("log lines compressed only to %d of %d bytes", len(c), len(inner))
			}
			got, err := Decompress(codec, c, len(inner))
			if err != nil || !bytes.Equal(got, inner) {
				t.Fatalf("round trip: err %v, equal %v", err, bytes.Equal(got, inner))
			}
			if _, err := Decompress(codec, c, len(inner)-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("limit not enforced: %v", err)
			}
		})
	}
}

func TestSnappyStreamHeaderIsSnappyJava(t *testing.T) {
	c, err := Compress(CodecSnappy, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	if !bytes.HasPrefix(c, want) {
		t.Fatalf("header % x", c[:16])
	}
}

func TestDeepIteratorOffsets(t *testing.T) {
	for _, codec := range []Codec{CodecGzip, CodecSnappy} {
		t.Run(codec.String(), func(t *testing.T) {
			set := AppendMessage(nil, []byte("plain-before"))
			wrapperAt := Offset(len(set))
			set, err := AppendCompressed(set, codec, NewMessageSet([]byte("a"), []byte("b"), []byte("c")))
			if err != nil {
				t.Fatal(err)
			}
			wrapperEnd := Offset(len(set))
			set = AppendMessage(set, []byte("plain-after"))

			type got struct {
				payload string
				next    Offset
			}
			want := []got{
				{"plain-before", wrapperAt},
				{"a", wrapperAt}, {"b", wrapperAt}, {"c", wrapperEnd},
				{"plain-after", Offset(len(set))},
			}
			d := NewDeepIterator(set, 0)
			var all []got
			for d.Next() {
				all = append(all, got{string(d.Message().Payload), d.NextOffset()})
			}
			if d.Err() != nil {
				t.Fatal(d.Err())
			}
			if fmt.Sprint(all) != fmt.Sprint(want) {
				t.Fatalf("got %v\nwant %v", all, want)
			}
		})
	}
}

func TestDeepIteratorCorruptCompressed(t *testing.T) {
	set := AppendMessageV1(nil, byte(CodecGzip), []byte("not gzip at all"))
	d := NewDeepIterator(set, 0)
	if d.Next() {
		t.Fatal("delivered a message from a corrupt wrapper")
	}
	if !errors.Is(d.Err(), ErrInvalidMessage) {
		t.Fatalf("err = %v", d.Err())
	}
}

// referenceCompressed is the straightforward encoding of a compressed
// message, with fresh compressors and buffers: AppendCompressed, which
// compresses in place with pooled compressors, must give the same bytes.
func referenceCompressed(t *testing.T, codec Codec, inner []byte) []byte {
	t.Helper()
	var payload []byte
	switch codec {
	case CodecGzip:
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		if _, err := w.Write(inner); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		payload = b.Bytes()
	case CodecSnappy:
		payload = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
		for rest := inner; len(rest) > 0; {
			n := min(len(rest), 32<<10)
			block := snappy.Encode(nil, rest[:n])
			payload = binary.BigEndian.AppendUint32(payload, uint32(len(block)))
			payload = append(payload, block...)
			rest = rest[n:]
		}
	}
	return AppendMessageV1(nil, byte(codec), payload)
}

func TestAppendCompressedBytes(t *testing.T) {
	random := make([]byte, 100<<10)
	for i := range random {
		random[i] = byte(i*7919 ^ i>>3)
	}
	for _, codec := range []Codec{CodecGzip, CodecSnappy} {
		for _, inner := range [][]byte{
			NewMessageSet([]byte("a")),
			NewMessageSet(logLines(2000)...), // several snappy blocks
			NewMessageSet(random),
			nil,
		} {
			want := append([]byte("prefix"), referenceCompressed(t, codec, inner)...)
			var dst []byte
			for range 3 { // pooled compressors and a reused buffer give the same bytes every time
				var err error
				dst, err = AppendCompressed(append(dst[:0], "prefix"...), codec, inner)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(dst, want) {
					t.Fatalf("%v: AppendCompressed gave %d bytes, the reference %d", codec, len(dst), len(want))
				}
			}
		}
	}
	if got, err := AppendCompressed([]byte("p"), Codec(3), []byte("x")); err == nil || string(got) != "p" {
		t.Fatalf("unknown codec: %q, %v", got, err)
	}
}

// TestAppendDecompressedInPlace: with room enough (DecompressedLen), the set
// is expanded into dst's own array, after what dst held; with too little
// room, or a stream that lies about its length, it still comes out whole
// and right; the limit holds either way.
func TestAppendDecompressedInPlace(t *testing.T) {
	inner := NewMessageSet(logLines(2000)...) // several snappy blocks
	for _, codec := range []Codec{CodecGzip, CodecSnappy} {
		t.Run(codec.String(), func(t *testing.T) {
			c, err := Compress(codec, inner)
			if err != nil {
				t.Fatal(err)
			}
			n := DecompressedLen(codec, c, DefaultDecompressLimit)
			if n != len(inner) {
				t.Fatalf("DecompressedLen = %d, want %d", n, len(inner))
			}
			if got := DecompressedLen(codec, c, 100); got != 100 {
				t.Fatalf("DecompressedLen under limit 100 = %d", got)
			}
			buf := make([]byte, 3, 3+n)
			copy(buf, "pre")
			out, err := AppendDecompressed(buf, codec, c, len(inner))
			if err != nil || !bytes.Equal(out[3:], inner) || string(out[:3]) != "pre" {
				t.Fatalf("in place: err %v, equal %v", err, bytes.Equal(out[3:], inner))
			}
			if &out[0] != &buf[0] {
				t.Fatal("expanded into a new array although dst had room")
			}
			for _, room := range []int{0, 1, n - 1, n + 1} {
				out, err := AppendDecompressed(make([]byte, 0, room), codec, c, len(inner))
				if err != nil || !bytes.Equal(out, inner) {
					t.Fatalf("room %d: err %v, equal %v", room, err, bytes.Equal(out, inner))
				}
				if _, err := AppendDecompressed(make([]byte, 0, room), codec, c, len(inner)-1); !errors.Is(err, ErrTooLarge) {
					t.Fatalf("room %d: limit not enforced: %v", room, err)
				}
			}
		})
	}
	// A gzip trailer that claims a larger size is a corrupt stream (gzip
	// checks ISIZE), whatever room the claim bought.
	c, _ := Compress(CodecGzip, inner)
	binary.LittleEndian.PutUint32(c[len(c)-4:], uint32(len(inner)+10))
	if _, err := Decompress(CodecGzip, c, DefaultDecompressLimit); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("lying ISIZE: %v", err)
	}
}

// TestDeepIteratorSetAlloc: inner sets are expanded into what alloc gives,
// asked for at their exact size, and every inner CRC is still checked.
func TestDeepIteratorSetAlloc(t *testing.T) {
	for _, codec := range []Codec{CodecGzip, CodecSnappy} {
		t.Run(codec.String(), func(t *testing.T) {
			lines := logLines(100)
			var set []byte
			for i := 0; i < len(lines); i += 50 {
				var err error
				if set, err = AppendCompressed(set, codec, NewMessageSet(lines[i:i+50]...)); err != nil {
					t.Fatal(err)
				}
			}
			buf := make([]byte, 1<<16)
			var asked []int
			d := NewDeepIterator(set, 0)
			d.SetAlloc(func(n int) []byte { asked = append(asked, n); return buf[:0:n] })
			i := 0
			for d.Next() {
				p := d.Message().Payload
				if !bytes.Equal(p, lines[i]) {
					t.Fatalf("message %d = %q", i, p)
				}
				if &p[:1][0] != &buf[len(NewMessageSet(lines[i-i%50:i]...))+Overhead] {
					t.Fatalf("message %d does not alias the buffer alloc gave", i)
				}
				i++
			}
			if d.Err() != nil || i != len(lines) {
				t.Fatalf("read %d of %d: %v", i, len(lines), d.Err())
			}
			want := len(NewMessageSet(lines[:50]...))
			if len(asked) != 2 || asked[0] != want {
				t.Fatalf("alloc asked for %v, want twice %d", asked, want)
			}

			// A flipped byte of an inner message (re-wrapped, so the wrapper's
			// own CRC holds) is caught by the inner CRC.
			inner := NewMessageSet(lines[:3]...)
			inner[len(inner)-1] ^= 1
			bad, err := AppendCompressed(nil, codec, inner)
			if err != nil {
				t.Fatal(err)
			}
			d.Reset(bad, 0)
			n := 0
			for d.Next() {
				n++
			}
			if n != 2 || !errors.Is(d.Err(), ErrInvalidMessage) {
				t.Fatalf("corrupt inner message: read %d, err %v", n, d.Err())
			}
		})
	}
}
