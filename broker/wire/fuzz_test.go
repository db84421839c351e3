package wire

import (
	"bytes"
	"errors"
	"reflect"
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
		c := Codec(codec & CodecMask)
		out, err := Decompress(c, payload, 1<<16)
		if err == nil && len(out) > 1<<16 {
			t.Fatalf("limit exceeded: %d bytes", len(out))
		}
		// Into a buffer with no room, or a reused one with some: the same
		// answer.
		for _, dst := range [][]byte{nil, make([]byte, 2, 64)} {
			got, err2 := AppendDecompressed(dst, c, payload, 1<<16)
			if (err == nil) != (err2 == nil) || err == nil && !bytes.Equal(got[len(dst):], out) {
				t.Fatalf("AppendDecompressed into %d/%d: %v, Decompress: %v", len(dst), cap(dst), err2, err)
			}
		}
	})
}

// FuzzDecodeReplicationRequest feeds arbitrary frames to the replication
// request decoders: no panic, only ErrMalformedRequest, and whatever decodes
// re-encodes to the same frame.
func FuzzDecodeReplicationRequest(f *testing.F) {
	for _, frame := range sampleReplicationFrames() {
		f.Add(frame)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		r, re, err := decodeReplication(frame)
		if err != nil {
			if !errors.Is(err, ErrMalformedRequest) {
				t.Fatalf("unexpected error type %v", err)
			}
			return
		}
		if !bytes.Equal(re[4:], frame) {
			// A METADATA request loses its repeated topics: its
			// re-encoding is the canonical form, which decodes to the
			// same request and re-encodes to itself.
			r2, re2, err := decodeReplication(re[4:])
			if _, ok := r.(*MetadataRequest); !ok || err != nil || !reflect.DeepEqual(r, r2) || !bytes.Equal(re2, re) {
				t.Fatalf("re-encoding differs:\n% x\n% x", re[4:], frame)
			}
		}
	})
}

// FuzzDecodeReplicationResponse feeds arbitrary bodies to every replication
// response decoder: no panic, only ErrMalformedRequest.
func FuzzDecodeReplicationResponse(f *testing.F) {
	f.Add(AppendMetadataResponse(nil, &MetadataResponse{Brokers: []Broker{{1, "h", 1}},
		Topics: []TopicMetadata{{Topic: "t", Partitions: []PartitionMetadata{{Replicas: []BrokerID{1}, ISR: []BrokerID{1}}}}}})[ResponseHeaderLen:])
	f.Add(AppendProduceAcksResponse(nil, []ProduceResult{{"t", 0, 0, 5}})[ResponseHeaderLen:])
	f.Add(AppendReplicaFetchResponseHeader(nil, 0, 1, 2, []EpochMark{{1, 1}}, 0)[ResponseHeaderLen:])
	f.Add(AppendOffsetForLeaderEpochResponse(nil, 0, 1, 2)[ResponseHeaderLen:])
	f.Add(AppendPartitionErrorsResponse(nil, 0, []PartitionError{{"t", 1, 0}})[ResponseHeaderLen:])
	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(err error) {
			if err != nil && !errors.Is(err, ErrMalformedRequest) {
				t.Fatalf("unexpected error type %v", err)
			}
		}
		if m, err := DecodeMetadataResponse(body); err == nil {
			if re := AppendMetadataResponse(nil, m); !bytes.Equal(re[ResponseHeaderLen:], body) {
				t.Fatal("metadata re-encoding differs")
			}
		} else {
			check(err)
		}
		_, err := DecodeProduceAcksResponse(body)
		check(err)
		if r, err := DecodeReplicaFetchResponse(body); err == nil {
			re := AppendReplicaFetchResponseHeader(nil, 0, r.HW, r.LEO, r.Epochs, len(r.Messages))
			if !bytes.Equal(append(re[ResponseHeaderLen:], r.Messages...), body) {
				t.Fatal("replica fetch re-encoding differs")
			}
		} else {
			check(err)
		}
		_, _, err = DecodeOffsetForLeaderEpochResponse(body)
		check(err)
		_, err = DecodePartitionErrorsResponse(body)
		check(err)
	})
}
