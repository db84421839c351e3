package producer

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// stallingBroker accepts connections with a small receive buffer; on the
// first it reads the 4-byte size prefix of a frame and then stops reading,
// so that a large request stays stuck in the write; the others are read
// whole.
type stallingBroker struct {
	ln        net.Listener
	gotPrefix chan struct{} // closed once the first connection got its prefix
	frames    chan []byte   // frames read on the other connections
	wg        sync.WaitGroup
	mu        sync.Mutex
	conns     []net.Conn
}

func newStallingBroker(t *testing.T) *stallingBroker {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return errors.Join(err, serr)
	}}
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &stallingBroker{ln: ln, gotPrefix: make(chan struct{}), frames: make(chan []byte, 4)}
	s.wg.Go(s.accept)
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *stallingBroker) accept() {
	for n := 0; ; n++ {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		first := n == 0
		s.wg.Go(func() {
			var prefix [4]byte
			if _, err := io.ReadFull(c, prefix[:]); err != nil {
				return
			}
			if first {
				close(s.gotPrefix)
				return // and never read again
			}
			frame := make([]byte, binary.BigEndian.Uint32(prefix[:]))
			if _, err := io.ReadFull(c, frame); err == nil {
				s.frames <- frame
			}
		})
	}
}

// A Send whose write waits for room in the socket gives up when its context
// ends, with the context's error; the connection is dropped and the next
// Send reconnects.
func TestSendGivesUpWhenContextEndsDuringAWrite(t *testing.T) {
	b := newStallingBroker(t)
	cfg := testConfig("0:" + b.ln.Addr().String())
	cfg.BufferSize = 4096
	cfg.MaxMessageSize = 32 << 20
	cfg.Confirm = ConfirmClose // this broker never answers a round trip
	p := newProducer(t, cfg)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sent := make(chan error, 1)
	go func() { sent <- p.Send(ctx, "t", Message{Value: make([]byte, 16<<20)}) }()
	select {
	case <-b.gotPrefix: // the Send is writing, and cannot finish
	case err := <-sent:
		t.Fatalf("a 16 MiB Send finished while nothing reads it: %v", err)
	}
	cancel()
	select {
	case err := <-sent:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the Send still waits 10 s after its context ended")
	}

	if err := p.Send(t.Context(), "t", values("after")...); err != nil {
		t.Fatal(err)
	}
	var frame []byte
	select {
	case frame = <-b.frames:
	case <-time.After(10 * time.Second):
		t.Fatal("the next Send's request did not arrive")
	}
	req, err := wire.DecodeRequest(frame)
	if err != nil {
		t.Fatal(err)
	}
	if got := payloads(t, req.Produce[0].Messages); len(got) != 1 || got[0] != "after" {
		t.Fatalf("next Send delivered %q on a new connection, want [after]", got)
	}
	// This broker never confirms: once it hangs up, Close counts the
	// accepted message as not delivered (instead of waiting
	// socket.timeout.ms for an answer).
	b.mu.Lock()
	for _, c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	var loss *LossError
	if err := p.Close(); !errors.As(err, &loss) || loss.NotDelivered != 1 {
		t.Fatalf("Close = %v, want 1 message not delivered", err)
	}
}
