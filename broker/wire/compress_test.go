package wire

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
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
