package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

// Both fetch paths must put the same bytes on the wire.
var fetchPaths = []struct {
	name        string
	useSendfile bool
}{{"sendfile", true}, {"copy", false}}

func TestProduceFetchExactBytes(t *testing.T) {
	for _, path := range fetchPaths {
		t.Run(path.name, func(t *testing.T) {
			ts := startServer(t, func(c *Config, _ *log.Config) { c.UseSendfile = path.useSendfile })
			c := ts.dial(t)
			set1 := wire.NewMessageSet(payloads(10, 200, "a")...)
			set2 := wire.NewMessageSet(payloads(3, 1000, "b")...)
			c.produce("events", 0, set1)
			c.produce("events", 0, set2)

			code, body := c.fetch("events", 0, 0, 1<<20)
			if code != wire.CodeNone || !bytes.Equal(body, append(append([]byte(nil), set1...), set2...)) {
				t.Fatalf("fetch from 0: code %v, %d bytes; want %d bytes", code, len(body), len(set1)+len(set2))
			}
			// Offsets are byte positions: the second set starts where the first ends.
			code, body = c.fetch("events", 0, wire.Offset(len(set1)), 1<<20)
			if code != wire.CodeNone || !bytes.Equal(body, set2) {
				t.Fatalf("fetch from %d: code %v, got %d bytes", len(set1), code, len(body))
			}
			// Iterating gives each message's next offset.
			it := wire.NewIterator(body, wire.Offset(len(set1)))
			n := 0
			for it.Next() {
				n++
			}
			if n != 3 || it.NextOffset() != wire.Offset(len(set1)+len(set2)) || it.Err() != nil {
				t.Fatalf("iterated %d messages to %d (err %v)", n, it.NextOffset(), it.Err())
			}
			// A small maxSize cuts mid-message, as Kafka 0.7.
			code, body = c.fetch("events", 0, 0, 100)
			if code != wire.CodeNone || !bytes.Equal(body, set1[:100]) {
				t.Fatalf("fetch 100 bytes: code %v, %d bytes", code, len(body))
			}
			// At the end: empty, no error.
			code, body = c.fetch("events", 0, wire.Offset(len(set1)+len(set2)), 1<<20)
			if code != wire.CodeNone || len(body) != 0 {
				t.Fatalf("fetch at end: code %v, %d bytes", code, len(body))
			}
			// Rewind: fetching from an earlier offset gives the same bytes again.
			code, body = c.fetch("events", 0, 0, int32(len(set1)))
			if code != wire.CodeNone || !bytes.Equal(body, set1) {
				t.Fatalf("rewind: code %v, %d bytes", code, len(body))
			}
		})
	}
}

// The header of a FETCH response, byte for byte as Kafka 0.7's
// MessageSetSend: the size counts the 2-byte error code.
func TestFetchResponseBytes(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial(t)
	set := wire.NewMessageSet([]byte("hello"))
	c.produce("t", 0, set)
	c.send(fetchReq("t", 0, 0, 1000))
	got := make([]byte, 6+len(set))
	if _, err := io.ReadFull(c.c, got); err != nil {
		t.Fatal(err)
	}
	want := append([]byte{0, 0, 0, byte(2 + len(set)), 0, 0}, set...)
	if !bytes.Equal(got, want) {
		t.Fatalf("got  % x\nwant % x", got, want)
	}
}

func TestSeveralPartitions(t *testing.T) {
	ts := startServer(t, func(_ *Config, lc *log.Config) {
		lc.NumPartitions = 2
		lc.TopicPartitions = map[string]int{"wide": 4}
	})
	c := ts.dial(t)
	sets := map[wire.Partition][]byte{}
	for p := wire.Partition(0); p < 4; p++ {
		sets[p] = wire.NewMessageSet(payloads(int(p)+1, 50, fmt.Sprint(p))...)
		c.produce("wide", p, sets[p])
	}
	for p := wire.Partition(0); p < 4; p++ {
		c.expectLog("wide", p, sets[p])
	}
	if got := ts.logs.Topics()["wide"]; got != 4 {
		t.Fatalf("wide has %d partitions", got)
	}
	// num.partitions applies to other topics: partition 2 of "narrow" is wrong.
	if code, _ := c.fetch("narrow", 2, 0, 100); code != wire.CodeWrongPartition {
		t.Fatalf("narrow-2: code %v", code)
	}
	if code, body := c.fetch("narrow", 1, 0, 100); code != wire.CodeNone || len(body) != 0 {
		t.Fatalf("narrow-1 before creation: code %v, %d bytes", code, len(body))
	}
}

// Partition -1 lets the broker pick one, at random in Kafka 0.7.
func TestProduceRandomPartition(t *testing.T) {
	var mu sync.Mutex
	var asked []int
	next := 0
	ts := startServer(t, func(c *Config, lc *log.Config) {
		lc.NumPartitions = 3
		c.ChoosePartition = func(n int) int {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, n)
			next = (next + 2) % n
			return next
		}
	})
	c := ts.dial(t)
	set := wire.NewMessageSet([]byte("x"))
	for range 3 {
		c.produce("r", -1, set)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(asked) != "[3 3 3]" {
		t.Fatalf("chooser asked for %v", asked)
	}
	// Chosen: 2, 1, 0: one set in each.
	for p := wire.Partition(0); p < 3; p++ {
		if code, body := c.fetch("r", p, 0, 100); code != wire.CodeNone || !bytes.Equal(body, set) {
			t.Fatalf("partition %d: code %v, % x", p, code, body)
		}
	}

	// With the real chooser, every message lands in some partition.
	ts2 := startServer(t, func(_ *Config, lc *log.Config) { lc.NumPartitions = 4 })
	c2 := ts2.dial(t)
	for range 40 {
		c2.produce("r", -1, set)
	}
	total := 0
	for p := wire.Partition(0); p < 4; p++ {
		_, body := c2.fetch("r", p, 0, 1<<20)
		total += len(body)
	}
	if total != 40*len(set) {
		t.Fatalf("found %d bytes over the partitions, want %d", total, 40*len(set))
	}
}

func TestMultiProduceMultiFetch(t *testing.T) {
	for _, path := range fetchPaths {
		t.Run(path.name, func(t *testing.T) {
			ts := startServer(t, func(c *Config, lc *log.Config) {
				c.UseSendfile = path.useSendfile
				lc.NumPartitions = 2
			})
			c := ts.dial(t)
			a0 := wire.NewMessageSet([]byte("a0-1"), []byte("a0-2"))
			a1 := wire.NewMessageSet([]byte("a1"))
			b0 := wire.NewMessageSet(payloads(5, 300, "b")...)
			c.send(&wire.Request{Type: wire.RequestMultiProduce, Produce: []wire.ProduceRequest{
				{Topic: "a", Partition: 0, Messages: a0},
				{Topic: "a", Partition: 1, Messages: a1},
				{Topic: "b", Partition: 0, Messages: b0},
			}})
			c.sync()
			c.send(&wire.Request{Type: wire.RequestMultiFetch, Fetch: []wire.FetchRequest{
				{Topic: "b", Partition: 0, Offset: 0, MaxSize: 1 << 20},
				{Topic: "a", Partition: 0, Offset: wire.Offset(len(a0)) - 13, MaxSize: 100}, // last message of a0
				{Topic: "a", Partition: 1, Offset: 999, MaxSize: 100},                       // out of range
				{Topic: "a", Partition: 7, Offset: 0, MaxSize: 100},                         // wrong partition
				{Topic: "a", Partition: 1, Offset: 0, MaxSize: 0},                           // empty
			}})
			code, body := c.response()
			if code != wire.CodeNone {
				t.Fatalf("multifetch code %v", code)
			}
			// The layout of Kafka 0.7's MultiMessageSetSend, built by hand.
			var want []byte
			for _, p := range []struct {
				code wire.ErrorCode
				set  []byte
			}{
				{wire.CodeNone, b0},
				{wire.CodeNone, a0[len(a0)-13:]},
				{wire.CodeOffsetOutOfRange, nil},
				{wire.CodeWrongPartition, nil},
				{wire.CodeNone, nil},
			} {
				want = binary.BigEndian.AppendUint32(want, uint32(2+len(p.set)))
				want = binary.BigEndian.AppendUint16(want, uint16(p.code))
				want = append(want, p.set...)
			}
			if !bytes.Equal(body, want) {
				t.Fatalf("multifetch body\n got % x\nwant % x", body, want)
			}
			parts, err := wire.DecodeMultiFetchResponse(body)
			if err != nil || len(parts) != 5 {
				t.Fatalf("decoded %d parts: %v", len(parts), err)
			}
		})
	}
}

func TestOffsets(t *testing.T) {
	ts := startServer(t, func(_ *Config, lc *log.Config) {
		lc.FileSize = 1000 // roll every few sets
		lc.NumPartitions = 2
	})
	c := ts.dial(t)
	set := wire.NewMessageSet(payloads(2, 300, "o")...) // 618 bytes
	for range 4 {
		c.produce("o", 0, set)
	}
	l, err := ts.logs.Get("o", 0)
	if err != nil {
		t.Fatal(err)
	}
	end := wire.Offset(l.EndOffset())
	if end != 4*wire.Offset(len(set)) {
		t.Fatalf("end offset %d", end)
	}
	tests := []struct {
		name      string
		topic     string
		partition wire.Partition
		time      int64
		max       int32
		code      wire.ErrorCode
		want      []wire.Offset
	}{
		{"latest", "o", 0, wire.LatestTime, 1, wire.CodeNone, []wire.Offset{end}},
		{"earliest", "o", 0, wire.EarliestTime, 1, wire.CodeNone, []wire.Offset{0}},
		{"all before now", "o", 0, 1 << 62, 100, wire.CodeNone, nil}, // filled below
		{"max 0", "o", 0, wire.LatestTime, 0, wire.CodeNone, []wire.Offset{}},
		{"not created yet, latest", "o", 1, wire.LatestTime, 5, wire.CodeNone, []wire.Offset{0}},
		{"not created yet, earliest", "o", 1, wire.EarliestTime, 5, wire.CodeNone, []wire.Offset{0}},
		{"not created yet, time", "o", 1, 12345, 5, wire.CodeNone, []wire.Offset{}},
		{"unknown topic", "nothing", 0, wire.LatestTime, 5, wire.CodeNone, []wire.Offset{0}},
		{"wrong partition", "o", 2, wire.LatestTime, 5, wire.CodeWrongPartition, []wire.Offset{}},
		{"negative partition", "o", -3, wire.LatestTime, 5, wire.CodeWrongPartition, []wire.Offset{}},
		{"invalid topic", "../x", 0, wire.LatestTime, 5, wire.CodeUnknown, []wire.Offset{}},
	}
	for _, tc := range tests {
		code, got := c.offsets(tc.topic, tc.partition, tc.time, tc.max)
		want := tc.want
		if tc.name == "all before now" {
			for _, o := range l.OffsetsBefore(1<<62, 100) {
				want = append(want, wire.Offset(o))
			}
			if len(want) < 3 || want[0] != end || want[len(want)-1] != 0 {
				t.Fatalf("log's own offsets %v: expected several segments", want)
			}
		}
		if code != tc.code || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: code %v offsets %v; want %v %v", tc.name, code, got, tc.code, want)
		}
	}
}

func TestFetchErrors(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial(t)
	set := wire.NewMessageSet([]byte("m"))
	c.produce("t", 0, set)
	tests := []struct {
		name      string
		topic     string
		partition wire.Partition
		offset    wire.Offset
		maxSize   int32
		code      wire.ErrorCode
	}{
		{"past the end", "t", 0, wire.Offset(len(set)) + 1, 100, wire.CodeOffsetOutOfRange},
		{"negative offset", "t", 0, -1, 100, wire.CodeOffsetOutOfRange},
		{"huge offset", "t", 0, 1 << 62, 100, wire.CodeOffsetOutOfRange},
		{"negative max size", "t", 0, 0, -1, wire.CodeInvalidFetchSize},
		{"min int max size", "t", 0, 0, -1 << 31, wire.CodeInvalidFetchSize},
		{"wrong partition", "t", 1, 0, 100, wire.CodeWrongPartition},
		{"negative partition", "t", -1, 0, 100, wire.CodeWrongPartition},
		{"unknown topic", "u", 0, 0, 100, wire.CodeNone},
		{"empty topic", "", 0, 0, 100, wire.CodeUnknown},
		{"dot dot", "..", 0, 0, 100, wire.CodeUnknown},
		{"path", "a/b", 0, 0, 100, wire.CodeUnknown},
	}
	for _, tc := range tests {
		code, body := c.fetch(tc.topic, tc.partition, tc.offset, tc.maxSize)
		if code != tc.code || len(body) != 0 {
			t.Errorf("%s: code %v with %d bytes, want %v", tc.name, code, len(body), tc.code)
		}
	}
	// The connection is still good.
	if code, body := c.fetch("t", 0, 0, 100); code != wire.CodeNone || !bytes.Equal(body, set) {
		t.Fatalf("after errors: code %v, % x", code, body)
	}
}

// Clients fetching the same segment at different offsets at the same time
// each get their own bytes: every send uses its own explicit file offset.
func TestConcurrentFetchesOfOneSegment(t *testing.T) {
	for _, path := range fetchPaths {
		t.Run(path.name, func(t *testing.T) {
			ts := startServer(t, func(c *Config, _ *log.Config) {
				c.UseSendfile = path.useSendfile
				c.SendBuffer = 100 << 10 // Kafka 0.7's default; larger fetches block and interleave
			})
			var all []byte
			p := ts.dial(t)
			for i := range 20 {
				set := wire.NewMessageSet(payloads(50, 100+i*37, fmt.Sprint(i))...)
				p.produce("shared", 0, set)
				all = append(all, set...)
			}
			// Message boundaries, to start fetches at.
			var starts []wire.Offset
			for it := wire.NewIterator(all, 0); it.Next(); {
				starts = append(starts, it.Offset())
			}
			const clients = 8
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for k := range clients {
				c := ts.dial(t)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range 20 {
						off := starts[(k*131+j*71)%len(starts)]
						max := int32(1000 + (k*7919+j*104729)%300000)
						c.send(fetchReq("shared", 0, off, max))
						code, body, err := readResponse(c.c)
						want := all[off:min(wire.Offset(len(all)), off+wire.Offset(max))]
						if err != nil || code != wire.CodeNone || !bytes.Equal(body, want) {
							errs <- fmt.Errorf("client %d fetch %d at %d: code %v, %d bytes, want %d (%v)", k, j, off, code, len(body), len(want), err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// readResponse is client.response for goroutines (no t.Fatal).
func readResponse(c io.Reader) (wire.ErrorCode, []byte, error) {
	var hdr [wire.ResponseHeaderLen]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return 0, nil, err
	}
	size := int32(binary.BigEndian.Uint32(hdr[:]))
	if size < 2 {
		return 0, nil, fmt.Errorf("response size %d", size)
	}
	body := make([]byte, size-2)
	if _, err := io.ReadFull(c, body); err != nil {
		return 0, nil, err
	}
	return wire.ErrorCode(int16(binary.BigEndian.Uint16(hdr[4:]))), body, nil
}
