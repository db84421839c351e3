package producer

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/broker/wire"
)

// peer is a protocol peer for unit tests: a TCP listener on 127.0.0.1:0 that
// reads request frames and decodes them with wire.DecodeRequest, as a broker
// does. The end-to-end tests use a real broker.
type peer struct {
	t  *testing.T
	ln net.Listener

	mu      sync.Mutex
	reqs    []peerRequest
	conns   []net.Conn
	closed  int // connections that ended
	closeAt int // close each connection after this many requests (0: never)
	wg      sync.WaitGroup
}

type peerRequest struct {
	conn int // index of the connection it came on
	req  *wire.Request
	size int // frame size on the wire
}

// newPeer starts a peer.
func newPeer(t *testing.T) *peer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{t: t, ln: ln}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.stop)
	return p
}

func (p *peer) addr() string { return p.ln.Addr().String() }

func (p *peer) brokerList(id int) string { return strconv.Itoa(id) + ":" + p.addr() }

func (p *peer) stop() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *peer) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		idx := len(p.conns)
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c, idx)
	}
}

func (p *peer) serve(c net.Conn, idx int) {
	defer p.wg.Done()
	defer func() {
		c.Close()
		p.mu.Lock()
		p.closed++
		p.mu.Unlock()
	}()
	n := 0
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		size := binary.BigEndian.Uint32(hdr[:])
		if size > 64<<20 {
			p.t.Errorf("peer: frame of %d bytes", size)
			return
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(c, body); err != nil {
			p.t.Errorf("peer: truncated frame: %v", err)
			return
		}
		req, err := wire.DecodeRequest(body)
		if err != nil {
			p.t.Errorf("peer: %v", err)
			return
		}
		if req.Type == wire.RequestOffsets {
			// A producer's round trip: answer as a broker does, in order.
			if _, err := c.Write(wire.AppendOffsetsResponse(nil, []wire.Offset{0})); err != nil {
				return
			}
			continue
		}
		p.mu.Lock()
		p.reqs = append(p.reqs, peerRequest{conn: idx, req: req, size: int(size) + 4})
		n++
		closeNow := p.closeAt > 0 && n >= p.closeAt
		p.mu.Unlock()
		if closeNow {
			return
		}
	}
}

// requests returns the requests received so far.
func (p *peer) requests() []peerRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]peerRequest(nil), p.reqs...)
}

// waitRequests waits until n requests have arrived and returns them.
func (p *peer) waitRequests(n int) []peerRequest {
	p.t.Helper()
	wait.For(p.t, fmt.Sprintf("%d requests", n), func() bool { return len(p.requests()) >= n })
	return p.requests()
}

// messages returns the payloads of every message the peer received for
// topic, in order, decompressing as a consumer does.
func (p *peer) messages(topic string) []string {
	var out []string
	for _, r := range p.requests() {
		for _, pr := range r.req.Produce {
			if pr.Topic == topic {
				out = append(out, payloads(p.t, pr.Messages)...)
			}
		}
	}
	return out
}

// waitMessages waits until n messages of topic have arrived and returns them.
func (p *peer) waitMessages(topic string, n int) []string {
	p.t.Helper()
	wait.For(p.t, fmt.Sprintf("%d messages of %s", n, topic), func() bool { return len(p.messages(topic)) >= n })
	return p.messages(topic)
}

// payloads decodes a message set the way a consumer does.
func payloads(t *testing.T, set []byte) []string {
	t.Helper()
	var out []string
	it := wire.NewDeepIterator(set, 0)
	for it.Next() {
		out = append(out, string(it.Message().Payload))
	}
	if err := it.Err(); err != nil {
		t.Errorf("decoding set: %v", err)
	}
	if _, partial := it.Partial(); partial {
		t.Errorf("set ends in a partial message")
	}
	return out
}
