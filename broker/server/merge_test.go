package server

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

// Pipelined PRODUCE requests, appended together or not, leave exactly the
// bytes of each request in order, per partition.
func TestPipelinedProduces(t *testing.T) {
	ts := startServer(t, func(_ *Config, lc *log.Config) { lc.NumPartitions = 2 })
	c := ts.dial(t)
	var frames []byte
	want := map[int32][]byte{}
	for i := range 500 {
		p := int32(i / 7 % 2) // runs of 7 requests to one partition
		set := wire.NewMessageSet([]byte(fmt.Sprintf("message %d", i)))
		want[p] = append(want[p], set...)
		frames = wire.AppendRequest(frames, produceReq("pipe", p, set))
		if i%50 == 0 { // a fetch in between ends a run
			frames = wire.AppendRequest(frames, fetchReq("pipe", 0, 0, 0))
		}
	}
	c.write(frames)
	for range 10 {
		if code, body := c.response(); code != wire.CodeNone || len(body) != 0 {
			t.Fatalf("interleaved fetch: code %v, %d bytes", code, len(body))
		}
	}
	c.sync()
	for p := int32(0); p < 2; p++ {
		if code, body := c.fetch("pipe", p, 0, 1<<20); code != wire.CodeNone || !bytes.Equal(body, want[p]) {
			t.Fatalf("partition %d: code %v, %d bytes, want %d", p, code, len(body), len(want[p]))
		}
	}
	if n := ts.srv.merged.Load(); n == 0 {
		t.Fatal("no request was appended together with another: the test did not exercise merging")
	}
}

// A bad request among pipelined ones: those before it are appended, it
// closes the connection, those after it are not, as if each were handled
// alone.
func TestPipelinedProducesWithABadOne(t *testing.T) {
	ts := startServer(t, nil)
	var frames, want []byte
	for i := range 20 {
		set := wire.NewMessageSet([]byte(fmt.Sprintf("message %d", i)))
		if i == 12 {
			set[len(set)-1] ^= 0xff // bad CRC
		} else if i < 12 {
			want = append(want, set...)
		}
		frames = wire.AppendRequest(frames, produceReq("bad", 0, set))
	}
	c := ts.dial(t)
	c.write(frames)
	c.expectClosed()
	if n := ts.srv.merged.Load(); n == 0 {
		t.Fatal("no request was appended together with another")
	}
	other := ts.dial(t)
	other.sync()
	if code, body := other.fetch("bad", 0, 0, 1<<20); code != wire.CodeNone || !bytes.Equal(body, want) {
		t.Fatalf("code %v, %d bytes, want %d", code, len(body), len(want))
	}
}
