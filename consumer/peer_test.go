package consumer_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
)

// peer is a scripted broker: it decodes each request with wire.DecodeRequest
// and answers with whatever respond returns (nil: hang up).
type peer struct {
	ln      net.Listener
	respond func(req *wire.Request) []byte
	wg      sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
	reqs  int
}

func newPeer(t *testing.T, respond func(*wire.Request) []byte) *peer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{ln: ln, respond: respond}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			p.wg.Add(1)
			go p.serve(t, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *peer) serve(t *testing.T, c net.Conn) {
	defer p.wg.Done()
	defer c.Close()
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		req, err := wire.DecodeRequest(body)
		if err != nil {
			t.Errorf("peer: %v", err)
			return
		}
		p.mu.Lock()
		p.reqs++
		p.mu.Unlock()
		resp := p.respond(req)
		if resp == nil {
			return
		}
		if _, err := c.Write(resp); err != nil {
			return
		}
	}
}

func (p *peer) connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

func fetchResponse(code wire.ErrorCode, set []byte) []byte {
	return append(wire.AppendResponseHeader(nil, code, len(set)), set...)
}

func newConsumer(t *testing.T, addr string) *consumer.SimpleConsumer {
	t.Helper()
	cfg := consumer.DefaultConfig()
	cfg.SocketTimeout = 10 * time.Second
	c, err := consumer.NewSimpleConsumer(addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestCorruptMessageIsNeverDelivered(t *testing.T) {
	good := wire.NewMessageSet([]byte("one"), []byte("two"), []byte("three"))
	for _, tc := range []struct {
		name    string
		corrupt func(set []byte) []byte
		want    string // payloads delivered before the error
	}{
		{"flipped payload byte", func(s []byte) []byte { s[12+9+1] ^= 0x40; return s }, "one"},
		{"flipped crc byte", func(s []byte) []byte { s[12+5] ^= 1; return s }, "one"},
		{"bad magic", func(s []byte) []byte { s[4] = 7; return s }, ""},
		{"size below header", func(s []byte) []byte { binary.BigEndian.PutUint32(s[12:], 2); return s }, "one"},
		{"compressed garbage", func(s []byte) []byte {
			return append(s[:12], wire.AppendMessageV1(nil, byte(wire.CodecGzip), []byte("not gzip"))...)
		}, "one"},
		{"corrupt inside a compressed set", func(s []byte) []byte {
			inner := wire.NewMessageSet([]byte("in1"), []byte("in2"))
			inner[len(inner)-1] ^= 0xff
			out, err := wire.AppendCompressed(s[:12], wire.CodecSnappy, inner)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}, "one,in1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := tc.corrupt(append([]byte(nil), good...))
			p := newPeer(t, func(*wire.Request) []byte { return fetchResponse(wire.CodeNone, set) })
			c := newConsumer(t, p.ln.Addr().String())
			ms, err := c.Fetch(t.Context(), "t", 0, 100, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			it := ms.Iterator()
			for it.Next() {
				got = append(got, string(it.Payload()))
			}
			if strings.Join(got, ",") != tc.want {
				t.Errorf("delivered %q, want %q", got, tc.want)
			}
			if !errors.Is(it.Err(), wire.ErrInvalidMessage) {
				t.Errorf("err = %v, want ErrInvalidMessage", it.Err())
			}
			var ce *wire.CorruptError
			if tc.name == "flipped payload byte" && (!errors.As(it.Err(), &ce) || ce.Pos != 112) {
				t.Errorf("err = %v, want a CorruptError at offset 112", it.Err())
			}
		})
	}
}

func TestPartialTrailingMessageIsDropped(t *testing.T) {
	set := wire.NewMessageSet([]byte("whole"), []byte("cut short"))
	p := newPeer(t, func(*wire.Request) []byte { return fetchResponse(wire.CodeNone, set[:len(set)-3]) })
	c := newConsumer(t, p.ln.Addr().String())
	ms, err := c.Fetch(t.Context(), "t", 0, 0, len(set)-3)
	if err != nil {
		t.Fatal(err)
	}
	it := ms.Iterator()
	var got []string
	var next wire.Offset
	for it.Next() {
		got = append(got, string(it.Payload()))
		next = it.NextOffset()
	}
	if it.Err() != nil || strings.Join(got, ",") != "whole" || next != 14 {
		t.Errorf("got %q next %d err %v; want whole, 14, nil", got, next, it.Err())
	}
}

func TestBadResponsesAreProtocolErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp []byte
	}{
		{"size above the fetch size", fetchResponse(wire.CodeNone, make([]byte, 200))},
		{"2 GiB size", []byte{0x7f, 0xff, 0xff, 0xff, 0, 0}},
		{"negative size", []byte{0xff, 0xff, 0xff, 0xfe, 0, 0}},
		{"size below the error code", []byte{0, 0, 0, 1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPeer(t, func(*wire.Request) []byte { return tc.resp })
			c := newConsumer(t, p.ln.Addr().String())
			_, err := c.Fetch(t.Context(), "t", 0, 0, 100)
			if !errors.Is(err, consumer.ErrProtocol) {
				t.Errorf("err = %v, want ErrProtocol", err)
			}
		})
	}
	p := newPeer(t, func(*wire.Request) []byte { return append(wire.AppendResponseHeader(nil, wire.CodeNone, 3), 1, 2, 3) })
	c := newConsumer(t, p.ln.Addr().String())
	if _, err := c.OffsetsBefore(t.Context(), "t", 0, -1, 1); !errors.Is(err, consumer.ErrProtocol) {
		t.Errorf("offsets: err = %v, want ErrProtocol", err)
	}
	if _, err := c.MultiFetch(t.Context(), consumer.FetchRequest{Topic: "t"}, consumer.FetchRequest{Topic: "u"}); !errors.Is(err, consumer.ErrProtocol) {
		t.Errorf("multifetch: err = %v, want ErrProtocol", err)
	}
}

func TestReconnectsAndRetriesOnce(t *testing.T) {
	set := wire.NewMessageSet([]byte("m"))
	var mu sync.Mutex
	n := 0
	p := newPeer(t, func(*wire.Request) []byte {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n == 2 {
			return nil // hang up instead of answering the second request
		}
		return fetchResponse(wire.CodeNone, set)
	})
	c := newConsumer(t, p.ln.Addr().String())
	for i := range 3 {
		if _, err := c.Fetch(t.Context(), "t", 0, 0, 0); err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
	}
	if got := p.connections(); got != 2 {
		t.Errorf("%d connections, want 2", got)
	}
	// A broker that always hangs up: the retry fails too.
	p2 := newPeer(t, func(*wire.Request) []byte { return nil })
	c2 := newConsumer(t, p2.ln.Addr().String())
	if _, err := c2.Fetch(t.Context(), "t", 0, 0, 0); err == nil || !errors.Is(err, io.EOF) {
		t.Errorf("err = %v, want EOF", err)
	}
	if got := p2.connections(); got != 2 {
		t.Errorf("%d connections, want 2 (one retry)", got)
	}
}

func TestHungBrokerAndContext(t *testing.T) {
	hang := make(chan struct{})
	p := newPeer(t, func(*wire.Request) []byte { <-hang; return nil })
	t.Cleanup(func() { close(hang) }) // runs before the peer's cleanup
	c := newConsumer(t, p.ln.Addr().String())
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Fetch(ctx, "t", 0, 0, 0); !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !isTimeout(err) {
		t.Errorf("err = %v, want the context's deadline", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fetch(t.Context(), "t", 0, 0, 0); !errors.Is(err, consumer.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
