package consumer_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/producer"
)

// Issue 11, case 9: a fetch at an offset inside a message used to give
// "message at offset 3 is 201351252 bytes" or wait forever; the broker now
// answers InvalidMessage, which the consumer reports as not a message
// boundary.
func TestFetchAtNonBoundaryOffset(t *testing.T) {
	f := start(t, 1)
	p := f.producer(nil)
	if err := p.Send(t.Context(), "t", producer.Message{Value: []byte("first message")}, producer.Message{Value: []byte("second")}); err != nil {
		t.Fatal(err)
	}
	f.broker.Flush(t)
	for _, off := range []wire.Offset{3, wire.Overhead + 1} {
		_, err := f.c.Fetch(t.Context(), "t", 0, off, 1<<20)
		if !errors.Is(err, consumer.ErrNotBoundary) || !errors.Is(err, wire.ErrInvalidMessage) {
			t.Fatalf("fetch at %d: %v, want ErrNotBoundary (InvalidMessage)", off, err)
		}
		if !strings.Contains(err.Error(), "is not a message boundary") || !strings.Contains(err.Error(), "t-0") {
			t.Fatalf("fetch at %d: %q, want it to name the partition and say not a message boundary", off, err)
		}
	}
	// A boundary still fetches.
	if set, err := f.c.Fetch(t.Context(), "t", 0, 0, 1<<20); err != nil || len(set.Bytes) == 0 {
		t.Fatalf("fetch at 0: %v, %d bytes", err, len(set.Bytes))
	}
}
