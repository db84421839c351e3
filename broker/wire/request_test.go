package wire

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

func sampleRequests() []*Request {
	set := NewMessageSet([]byte("m1"), []byte("m2"))
	return []*Request{
		{Type: RequestProduce, Produce: []ProduceRequest{{Topic: "t", Partition: -1, Messages: set}}},
		{Type: RequestMultiProduce, Produce: []ProduceRequest{{Topic: "a", Partition: 0, Messages: set}, {Topic: "b", Partition: 3, Messages: set[:11]}}},
		{Type: RequestFetch, Fetch: []FetchRequest{{Topic: "t", Partition: 2, Offset: 1 << 40, MaxSize: 1 << 20}}},
		{Type: RequestMultiFetch, Fetch: []FetchRequest{{Topic: "a", Offset: 0, MaxSize: 300}, {Topic: "b", Partition: 1, Offset: 209, MaxSize: 5}}},
		{Type: RequestOffsets, Offsets: &OffsetsRequest{Topic: "t", Partition: 1, Time: EarliestTime, MaxOffsets: 1}},
	}
}

func TestRequestRoundTrip(t *testing.T) {
	for _, r := range sampleRequests() {
		t.Run(r.Type.String(), func(t *testing.T) {
			frame := AppendRequest(nil, r)
			if size := binary.BigEndian.Uint32(frame); int(size) != len(frame)-4 {
				t.Fatalf("size field %d for %d bytes", size, len(frame)-4)
			}
			got, err := DecodeRequest(frame[4:])
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, r) {
				t.Fatalf("got %+v\nwant %+v", got, r)
			}
			// Every strict prefix is malformed, never a panic.
			for n := 0; n < len(frame)-4; n++ {
				if _, err := DecodeRequest(frame[4 : 4+n]); !errors.Is(err, ErrMalformedRequest) {
					t.Fatalf("prefix of %d bytes: err = %v", n, err)
				}
			}
		})
	}
}

// A FETCH frame, byte for byte as Kafka 0.7's FetchRequest.writeTo lays it out.
func TestFetchRequestBytes(t *testing.T) {
	frame := AppendRequest(nil, &Request{Type: RequestFetch, Fetch: []FetchRequest{{Topic: "ab", Partition: 1, Offset: 2, MaxSize: 3}}})
	want := []byte{
		0, 0, 0, 22, // size
		0, 1, // FETCH
		0, 2, 'a', 'b', // topic
		0, 0, 0, 1, // partition
		0, 0, 0, 0, 0, 0, 0, 2, // offset
		0, 0, 0, 3, // max size
	}
	if !reflect.DeepEqual(frame, want) {
		t.Fatalf("got % x\nwant % x", frame, want)
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	tests := map[string][]byte{
		"unknown type":      {0, 9},
		"negative string":   {0, 1, 0xff, 0xff},
		"negative set size": append(AppendString([]byte{0, 0}, "t"), 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff),
		"huge set size":     append(AppendString([]byte{0, 0}, "t"), 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff),
		"negative count":    {0, 2, 0x80, 0},
		"trailing bytes":    append(AppendRequest(nil, sampleRequests()[4])[4:], 0),
		"bad utf8":          {0, 1, 0, 1, 0xff},
	}
	for name, frame := range tests {
		if _, err := DecodeRequest(frame); !errors.Is(err, ErrMalformedRequest) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestOffsetsResponse(t *testing.T) {
	want := []Offset{4180, 2090, 0}
	frame := AppendOffsetsResponse(nil, want)
	if int(binary.BigEndian.Uint32(frame)) != len(frame)-4 || binary.BigEndian.Uint16(frame[4:]) != 0 {
		t.Fatalf("header % x", frame[:6])
	}
	got, err := DecodeOffsetsResponse(frame[6:])
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := DecodeOffsetsResponse(frame[6 : len(frame)-1]); err == nil {
		t.Fatal("short offsets response accepted")
	}
}

func TestMultiFetchResponse(t *testing.T) {
	set := NewMessageSet([]byte("x"))
	var body []byte
	body = binary.BigEndian.AppendUint32(body, uint32(2+len(set)))
	body = binary.BigEndian.AppendUint16(body, 0)
	body = append(body, set...)
	body = binary.BigEndian.AppendUint32(body, 2)
	body = binary.BigEndian.AppendUint16(body, uint16(CodeOffsetOutOfRange))
	parts, err := DecodeMultiFetchResponse(body)
	if err != nil || len(parts) != 2 || string(parts[0].Messages) != string(set) || parts[1].Code != CodeOffsetOutOfRange || len(parts[1].Messages) != 0 {
		t.Fatalf("parts %+v, err %v", parts, err)
	}
	if _, err := DecodeMultiFetchResponse(body[:len(body)-1]); err == nil {
		t.Fatal("truncated response accepted")
	}
}
