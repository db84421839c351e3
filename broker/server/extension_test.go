package server

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

// testExtension serves METADATA with an empty answer, refuses produces to
// topic "ro" and bounds fetches of topic "hw" at limit.
type testExtension struct {
	limit    wire.Offset
	mu       sync.Mutex
	produced []string
}

func (x *testExtension) Handles(t wire.RequestType) bool { return t == wire.RequestMetadata }

func (x *testExtension) Serve(frame []byte, w *ResponseWriter) error {
	if _, err := wire.DecodeMetadataRequest(frame); err != nil {
		return err
	}
	w.Write(wire.AppendMetadataResponse(nil, &wire.MetadataResponse{}))
	return w.Flush()
}

func (x *testExtension) ProduceAllowed(topic string, partition wire.Partition) error {
	if topic == "ro" {
		return wire.ErrNotLeaderForPartition
	}
	return nil
}

func (x *testExtension) Produced(topic string, partition wire.Partition) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.produced = append(x.produced, topic)
}

func (x *testExtension) FetchLimit(topic string, partition wire.Partition) (wire.Offset, bool) {
	return x.limit, topic == "hw"
}

func (x *testExtension) OffsetsLimit(topic string, partition wire.Partition) (wire.Offset, bool, error) {
	if topic == "ro" {
		return 0, false, wire.ErrNotLeaderForPartition
	}
	return x.limit, topic == "hw", nil
}

// TestExtension: a server with an extension passes it the new request
// types, asks it before producing, and bounds fetches where it says so.
func TestExtension(t *testing.T) {
	set := wire.NewMessageSet([]byte("one"), []byte("two"))
	first := wire.Offset(len(wire.NewMessageSet([]byte("one"))))
	x := &testExtension{limit: first}
	ts := startServer(t, func(c *Config, _ *log.Config) { c.Extension = x })
	c := ts.dial(t)

	c.write(wire.AppendMetadataRequest(nil, &wire.MetadataRequest{Topics: []string{"t"}}))
	code, body := c.response()
	if code != wire.CodeNone {
		t.Fatalf("metadata code %v", code)
	}
	if md, err := wire.DecodeMetadataResponse(body); err != nil || len(md.Topics) != 0 {
		t.Fatalf("metadata = %+v, %v", md, err)
	}

	c.produce("hw", 0, set)
	code, got := c.fetch("hw", 0, 0, 1<<20)
	if code != wire.CodeNone || !bytes.Equal(got, set[:first]) {
		t.Fatalf("fetch bounded at %d = %v, %d bytes", first, code, len(got))
	}
	c.produce("free", 0, set)
	c.expectLog("free", 0, set)
	x.mu.Lock()
	produced := append([]string(nil), x.produced...)
	x.mu.Unlock()
	if len(produced) != 2 {
		t.Fatalf("Produced called for %v", produced)
	}

	c.send(produceReq("ro", 0, set))
	c.expectClosed()
	if _, err := ts.logs.Get("ro", 0); !errors.Is(err, wire.ErrWrongPartition) {
		t.Fatalf("refused produce created the log: %v", err)
	}
}

// TestNoExtension: without one, the new request types close the connection
// as any unknown request does.
func TestNoExtension(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial(t)
	c.write(wire.AppendMetadataRequest(nil, &wire.MetadataRequest{}))
	c.expectClosed()
}
