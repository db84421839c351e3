package audit

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"
	"time"
)

func TestEnvelopeLayout(t *testing.T) {
	h := Header{Time: time.Unix(0, 0x0102030405060708), Session: 0x1112131415161718, Seq: 0x2122232425262728, Host: "h1"}
	got, err := AppendEnvelope([]byte{0xEE}, h, []byte("pay"))
	if err != nil {
		t.Fatal(err)
	}
	want := "ee" + "a71d" + "01" + "0102030405060708" + "1112131415161718" + "2122232425262728" + "02" + hex.EncodeToString([]byte("h1")) + hex.EncodeToString([]byte("pay"))
	if hex.EncodeToString(got) != want {
		t.Fatalf("envelope\n got %x\nwant %s", got, want)
	}
	if h.Len() != 30 {
		t.Fatalf("Len = %d, want 30", h.Len())
	}
	back, payload, err := DecodeEnvelope(got[1:])
	if err != nil {
		t.Fatal(err)
	}
	if !back.Time.Equal(h.Time) || back.Session != h.Session || back.Seq != h.Seq || back.Host != h.Host || string(payload) != "pay" {
		t.Fatalf("decoded %+v %q, want %+v pay", back, payload, h)
	}
}

func TestEnvelopeErrors(t *testing.T) {
	good, _ := AppendEnvelope(nil, Header{Time: time.Unix(5, 0), Host: "host"}, nil)
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"plain payload", []byte("hello"), ErrNotEnvelope},
		{"empty", nil, ErrNotEnvelope},
		{"magic only", good[:2], ErrTruncated},
		{"version 2", append([]byte{0xA7, 0x1D, 2}, good[3:]...), ErrVersion},
		{"fixed part cut", good[:20], ErrTruncated},
		{"host cut", good[:len(good)-1], ErrTruncated},
		{"empty host", append(append([]byte{}, good[:27]...), 0), ErrInvalid},
	}
	for _, c := range cases {
		if _, _, err := DecodeEnvelope(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := AppendEnvelope(nil, Header{}, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty host: err = %v, want ErrInvalid", err)
	}
	if _, err := AppendEnvelope(nil, Header{Host: string(bytes.Repeat([]byte("x"), 256))}, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("long host: err = %v, want ErrInvalid", err)
	}
}

func TestEventRoundTrip(t *testing.T) {
	e := Event{Topic: "page-views", Host: "fe-1", Session: 7, Start: time.Unix(1000, 0), Length: time.Second, Count: 12, First: 30}
	b, err := AppendEvent(nil, e)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != eventFixed+len(e.Host)+len(e.Topic) {
		t.Fatalf("event of %d bytes, want %d", len(b), eventFixed+len(e.Host)+len(e.Topic))
	}
	got, err := DecodeEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Topic != e.Topic || got.Host != e.Host || got.Session != e.Session || !got.Start.Equal(e.Start) || got.Length != e.Length || got.Count != e.Count || got.First != e.First {
		t.Fatalf("decoded %+v, want %+v", got, e)
	}
	for i := 0; i < len(b); i++ {
		if _, err := DecodeEvent(b[:i]); err == nil {
			t.Fatalf("DecodeEvent of the first %d bytes succeeded", i)
		}
	}
	if _, err := DecodeEvent(append(b, 0)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("trailing byte: err = %v, want ErrInvalid", err)
	}
	if _, err := DecodeEvent([]byte("plain")); !errors.Is(err, ErrNotEvent) {
		t.Fatalf("plain: err = %v", err)
	}
	bad := e
	bad.Start = time.Unix(1000, 1)
	if _, err := DecodeEvent(mustEvent(t, bad)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unaligned window: err = %v", err)
	}
	if _, err := AppendEvent(nil, Event{Topic: "a/b", Host: "h", Length: 1}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad topic: err = %v", err)
	}
}

func mustEvent(t *testing.T, e Event) []byte {
	t.Helper()
	b, err := AppendEvent(nil, e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWindow(t *testing.T) {
	cases := []struct{ ns, l, want int64 }{{0, 10, 0}, {9, 10, 0}, {10, 10, 10}, {-1, 10, -10}, {-10, 10, -10}, {1_999_999_999, 1e9, 1e9}}
	for _, c := range cases {
		if got := Window(time.Unix(0, c.ns), time.Duration(c.l)).UnixNano(); got != c.want {
			t.Errorf("Window(%d, %d) = %d, want %d", c.ns, c.l, got, c.want)
		}
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	good, _ := AppendEnvelope(nil, Header{Time: time.Unix(5, 6), Session: 1, Seq: 2, Host: "host"}, []byte("payload"))
	f.Add(good)
	f.Add([]byte("plain"))
	f.Add(good[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		h, payload, err := DecodeEnvelope(b)
		if err != nil {
			return
		}
		again, err := AppendEnvelope(nil, h, payload)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding %x gave %x, %v", b, again, err)
		}
	})
}

func FuzzDecodeEvent(f *testing.F) {
	good, _ := AppendEvent(nil, Event{Topic: "t", Host: "h", Session: 3, Start: time.Unix(10, 0), Length: time.Second, Count: 4, First: 5})
	f.Add(good)
	f.Add([]byte{0xA7, 0x1E, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEvent(b)
		if err != nil {
			return
		}
		again, err := AppendEvent(nil, e)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding %x gave %x, %v", b, again, err)
		}
	})
}

// TestEventImpossibleCounts: counts no producer can have are refused by both
// the encoder and the decoder. Before, DecodeEvent accepted count 2^64-3,
// which kafka-audit summed as -3 sent messages, hiding 3 missing ones.
func TestEventImpossibleCounts(t *testing.T) {
	e := Event{Topic: "t", Host: "h", Session: 1, Start: time.Unix(10, 0), Length: time.Second, Count: 10, First: 0}
	good := mustEvent(t, e)
	for _, tc := range []struct {
		name         string
		count, first uint64
		ok           bool
	}{
		{"2^64-3", ^uint64(0) - 2, 0, false},
		{"2^63", 1 << 63, 0, false},
		{"2^63-1", 1<<63 - 1, 0, true},
		{"past 2^64-1", 10, ^uint64(0) - 5, false},
		{"up to 2^64-1", 6, ^uint64(0) - 5, true},
		{"zero", 0, ^uint64(0), true},
	} {
		forged := bytes.Clone(good)
		binary.BigEndian.PutUint64(forged[19:], tc.count)
		binary.BigEndian.PutUint64(forged[27:], tc.first)
		_, err := DecodeEvent(forged)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: DecodeEvent: %v, want ok=%v", tc.name, err, tc.ok)
		}
		bad := e
		bad.Count, bad.First = tc.count, tc.first
		if _, err := AppendEvent(nil, bad); (err == nil) != tc.ok {
			t.Errorf("%s: AppendEvent: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
