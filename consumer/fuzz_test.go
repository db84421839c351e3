package consumer

import (
	"errors"
	"testing"

	"github.com/netdb11/kafka/broker/wire"
)

// FuzzIterator feeds arbitrary fetch responses to the iterator: it must not
// panic, must deliver only messages whose CRC holds, with next offsets that
// grow within the set, and must report a message too large only when it
// delivered nothing.
func FuzzIterator(f *testing.F) {
	plain := wire.NewMessageSet([]byte("one"), []byte("two"), []byte{})
	f.Add(plain, 0)
	f.Add(plain[:len(plain)-2], 7)
	for _, codec := range []wire.Codec{wire.CodecGzip, wire.CodecSnappy} {
		set, err := wire.AppendCompressed(wire.NewMessageSet([]byte("head")), codec, plain)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(set, 3)
	}
	f.Fuzz(func(t *testing.T, b []byte, maxDelta int) {
		const base = 1000
		set := MessageSet{Topic: "t", Offset: base, MaxBytes: len(b) + maxDelta%64, Bytes: b}
		it := set.Iterator()
		n := 0
		last := wire.Offset(base)
		for it.Next() {
			n++
			if next := it.NextOffset(); next < last || next > base+wire.Offset(len(b)) {
				t.Fatalf("next offset %d after %d, set ends at %d", next, last, base+len(b))
			}
			last = it.NextOffset()
			m := it.Message()
			if wire.Checksum(m.Payload) != m.CRC {
				t.Fatalf("delivered a message failing its CRC")
			}
		}
		err := it.Err()
		if errors.Is(err, ErrMessageTooLarge) && n > 0 {
			t.Fatalf("too large after %d messages", n)
		}
		if err != nil && !errors.Is(err, wire.ErrInvalidMessage) && !errors.Is(err, ErrMessageTooLarge) {
			t.Fatalf("unexpected error %v", err)
		}
	})
}
