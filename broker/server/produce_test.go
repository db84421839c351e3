package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
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
	want := map[wire.Partition][]byte{}
	for i := range 500 {
		p := wire.Partition(i / 7 % 2) // runs of 7 requests to one partition
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
	for p := wire.Partition(0); p < 2; p++ {
		c.expectLog("pipe", p, want[p])
	}
	ts.expectMerged(t)
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
	ts.expectMerged(t)
	other := ts.dial(t)
	other.sync()
	other.expectLog("bad", 0, want)
}

// Pipelined PRODUCE requests to partition -1 are appended together while
// the broker's picks agree, and each request still gets exactly one pick:
// the one that decides where it lands.
func TestPipelinedRandomProduces(t *testing.T) {
	const requests = 300
	var mu sync.Mutex
	picks := 0
	pick := func(i int) wire.Partition { return wire.Partition(i / 4 % 3) } // runs of 4 picks of one partition
	ts := startServer(t, func(c *Config, lc *log.Config) {
		lc.NumPartitions = 3
		c.ChoosePartition = func(n int) int {
			mu.Lock()
			defer mu.Unlock()
			if n != 3 {
				t.Errorf("chooser asked for %d partitions, want 3", n)
			}
			p := pick(picks)
			picks++
			return int(p)
		}
	})
	var frames []byte
	want := map[wire.Partition][]byte{}
	for i := range requests {
		set := wire.NewMessageSet([]byte(fmt.Sprintf("message %d", i)))
		want[pick(i)] = append(want[pick(i)], set...)
		frames = wire.AppendRequest(frames, produceReq("rand", -1, set))
	}
	c := ts.dial(t)
	c.write(frames)
	c.sync()
	mu.Lock()
	if picks != requests {
		t.Errorf("%d picks for %d requests", picks, requests)
	}
	mu.Unlock()
	for p := wire.Partition(0); p < 3; p++ {
		c.expectLog("rand", p, want[p])
	}
	ts.expectMerged(t)
}

// With one partition, every request to partition -1 lands in it, in order,
// appended together with the others (the 0.7 sync producer at batch size 1
// with a static broker.list sends exactly this).
func TestPipelinedRandomProducesOnePartition(t *testing.T) {
	ts := startServer(t, nil)
	var frames, want []byte
	for i := range 500 {
		set := wire.NewMessageSet([]byte(fmt.Sprintf("message %d", i)))
		want = append(want, set...)
		frames = wire.AppendRequest(frames, produceReq("one", -1, set))
	}
	c := ts.dial(t)
	c.write(frames)
	c.sync()
	c.expectLog("one", 0, want)
	ts.expectMerged(t)
}

// A follower that differs from the current PRODUCE in anything but its
// messages (topic, partition, a malformed set size) is not merged: it is
// handled on its own, and a malformed one closes the connection after
// everything before it is appended.
func TestPipelinedProducesStopAtADifferentFrame(t *testing.T) {
	ts := startServer(t, func(_ *Config, lc *log.Config) { lc.NumPartitions = 2 })
	set := func(i int) []byte { return wire.NewMessageSet([]byte(fmt.Sprintf("message %d", i))) }
	var frames []byte
	want := map[string][]byte{}
	add := func(topic string, p wire.Partition, s []byte) {
		frames = wire.AppendRequest(frames, produceReq(topic, p, s))
		k := fmt.Sprint(topic, p)
		want[k] = append(want[k], s...)
	}
	for i := range 10 {
		add("a", 0, set(i))
	}
	add("b", 0, set(10)) // same length of topic, other topic
	add("a", 1, set(11)) // other partition
	add("a", 1, set(12))
	bad := wire.AppendRequest(nil, produceReq("a", 1, set(13)))
	binary.BigEndian.PutUint32(bad[4+2+2+1+4:], uint32(len(set(13))+1)) // set size beyond the frame
	frames = append(frames, bad...)
	frames = wire.AppendRequest(frames, produceReq("a", 1, set(14))) // after the bad one: dropped
	c := ts.dial(t)
	c.write(frames)
	c.expectClosed()
	other := ts.dial(t)
	other.sync()
	for _, k := range []struct {
		topic string
		p     wire.Partition
	}{{"a", 0}, {"b", 0}, {"a", 1}} {
		other.expectLog(k.topic, k.p, want[fmt.Sprint(k.topic, k.p)])
	}
}

// Requests larger than the initial read buffer (a batch of 50 messages of
// 200 bytes) make it grow, so that pipelined ones are read, and appended,
// together too.
func TestPipelinedBatchProduces(t *testing.T) {
	ts := startServer(t, nil)
	var frames, want []byte
	for i := range 30 {
		set := wire.NewMessageSet(payloads(50, 200, fmt.Sprint(i))...)
		if len(set) <= readBufSize {
			t.Fatalf("a set of %d bytes fits the initial read buffer", len(set))
		}
		want = append(want, set...)
		frames = wire.AppendRequest(frames, produceReq("batch", 0, set))
	}
	c := ts.dial(t)
	c.write(frames)
	c.sync()
	c.expectLog("batch", 0, want)
	ts.expectMerged(t)
}

// pipelinedProduces is a pure function of the buffered bytes: it takes the
// followers that match the head, stops at the first that does not, and
// reports the bytes they take.
func TestPipelinedProducesFunction(t *testing.T) {
	frame := func(topic string, p wire.Partition, set []byte) []byte {
		return wire.AppendRequest(nil, produceReq(topic, p, set))
	}
	set := func(s string) []byte { return wire.NewMessageSet([]byte(s)) }
	first := frame("a", 0, set("x"))
	head := first[sizeFieldLen : len(first)-len(set("x"))-sizeFieldLen]
	cat := func(frames ...[]byte) []byte { return bytes.Join(frames, nil) }
	tests := []struct {
		name  string
		buf   []byte
		limit int
		sets  int
		n     int
	}{
		{"empty", nil, 10, 0, 0},
		{"two", cat(frame("a", 0, set("1")), frame("a", 0, set("22"))), 10, 2, len(frame("a", 0, set("1"))) + len(frame("a", 0, set("22")))},
		{"other partition stops", cat(frame("a", 0, set("1")), frame("a", 1, set("2"))), 10, 1, len(frame("a", 0, set("1")))},
		{"other topic stops", cat(frame("b", 0, set("1"))), 10, 0, 0},
		{"fetch stops", wire.AppendRequest(nil, fetchReq("a", 0, 0, 0)), 10, 0, 0},
		{"incomplete stops", frame("a", 0, set("1"))[:10], 10, 0, 0},
		{"empty set stops", frame("a", 0, nil), 10, 0, 0},
		{"limit", cat(frame("a", 0, set("1")), frame("a", 0, set("2"))), 1, 1, len(frame("a", 0, set("1")))},
	}
	for _, tc := range tests {
		sets, n := pipelinedProduces(nil, head, tc.buf, tc.limit)
		if len(sets) != tc.sets || n != tc.n {
			t.Errorf("%s: %d sets, %d bytes; want %d, %d", tc.name, len(sets), n, tc.sets, tc.n)
		}
	}
}

// FuzzPipelinedProduces feeds arbitrary bytes after a PRODUCE's head: what
// pipelinedProduces takes must be whole frames that decode as PRODUCE
// requests to the same topic and partition, carrying the sets it returns.
func FuzzPipelinedProduces(f *testing.F) {
	req := wire.AppendRequest(nil, produceReq("topic", 3, wire.NewMessageSet([]byte("m"))))
	f.Add(req)
	f.Add(append(append([]byte(nil), req...), req...))
	f.Add(wire.AppendRequest(nil, fetchReq("topic", 3, 0, 10)))
	head := req[sizeFieldLen : len(req)-len(wire.NewMessageSet([]byte("m")))-sizeFieldLen]
	f.Fuzz(func(t *testing.T, buf []byte) {
		sets, n := pipelinedProduces(nil, head, buf, maxMergedRequests)
		if n > len(buf) || len(sets) > maxMergedRequests {
			t.Fatalf("took %d of %d bytes, %d sets", n, len(buf), len(sets))
		}
		pos := 0
		for i, set := range sets {
			size := int(binary.BigEndian.Uint32(buf[pos:]))
			r, err := wire.DecodeRequest(buf[pos+sizeFieldLen : pos+sizeFieldLen+size])
			if err != nil {
				t.Fatalf("set %d: its frame does not decode: %v", i, err)
			}
			if r.Type != wire.RequestProduce || r.Produce[0].Topic != "topic" || r.Produce[0].Partition != 3 || !bytes.Equal(r.Produce[0].Messages, set) {
				t.Fatalf("set %d: frame decodes as %+v", i, r)
			}
			pos += sizeFieldLen + size
		}
		if pos != n {
			t.Fatalf("frames take %d bytes, pipelinedProduces said %d", pos, n)
		}
	})
}

// 0.7's async producer sends each batch as a MULTIPRODUCE, at batch.size 1
// one of one part per message: pipelined ones are appended together, each
// still its own request (a bad one closes the connection with those before
// it appended), and a MULTIPRODUCE of several parts stays one request.
func TestPipelinedOnePartMultiProduces(t *testing.T) {
	multi := func(parts ...wire.ProduceRequest) *wire.Request {
		return &wire.Request{Type: wire.RequestMultiProduce, Produce: parts}
	}
	part := func(p wire.Partition, set []byte) wire.ProduceRequest {
		return wire.ProduceRequest{Topic: "m", Partition: p, Messages: set}
	}
	ts := startServer(t, func(_ *Config, lc *log.Config) { lc.NumPartitions = 2 })
	var frames []byte
	want := map[wire.Partition][]byte{}
	for i := range 300 {
		set := wire.NewMessageSet([]byte(fmt.Sprintf("message %d", i)))
		switch {
		case i == 250:
			set[len(set)-1] ^= 0xff // bad CRC: closes the connection
		case i > 250:
		case i%40 == 39: // two parts: one request, ends a run
			other := wire.NewMessageSet([]byte(fmt.Sprintf("other %d", i)))
			frames = wire.AppendRequest(frames, multi(part(0, set), part(1, other)))
			want[0] = append(want[0], set...)
			want[1] = append(want[1], other...)
			continue
		default:
			want[0] = append(want[0], set...)
		}
		frames = wire.AppendRequest(frames, multi(part(0, set)))
	}
	c := ts.dial(t)
	c.write(frames)
	c.expectClosed()
	ts.expectMerged(t)
	other := ts.dial(t)
	other.sync()
	for p := wire.Partition(0); p < 2; p++ {
		other.expectLog("m", p, want[p])
	}
}
