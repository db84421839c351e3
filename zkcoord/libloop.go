package zkcoord

import (
	"bytes"
	"encoding/binary"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The client library (go-zookeeper/zk v1.0.4) reads its last-seen zxid in its
// connection goroutine, in sendSetWatches, each time a session is granted on
// a connection, while the new connection's receive goroutine, already
// running, writes the same field for every reply, with no lock between them
// (samuel/go-zookeeper#178, go-zookeeper/zk#35, unfixed). The read happens only
// when watches are registered: on a reconnection that keeps its session, and
// on a first connection if a caller set a watch in the moment between the
// session being granted and the library reaching sendSetWatches. The values
// are whole words and a stale zxid only makes the server resend a watch
// event, so the race is benign, but the race detector rightly reports it and
// fails whichever test reconnected with its watches (CI, 5 December: the
// fault suite's ensemble trial; earlier the mirror's and the replica's tests).
//
// Under the race detector, each connection the library dials is therefore
// gated (gatedConn): the receive goroutine's first read after the session
// handshake waits until the connection goroutine is done with the zxid. That
// is when the setWatches request is written, which the library does only
// after the read (read, go statement, request channel, send goroutine,
// Write: a chain the race detector follows), or, with no watches, when the
// connection goroutine is past sendSetWatches without having started the
// goroutine that sends them, which only its stack shows, since the library
// exposes nothing. The gate costs a reconnection microseconds; without the
// race detector the library's connections are used as they are.

// gateWait bounds how long a receive goroutine waits at the gate; past it
// the gate opens (something else is wrong, and the library's own timeouts
// will say what).
const gateWait = 5 * time.Second

// gatedConn is a connection of the client library whose replies, after the
// session handshake, are read only once the library's connection goroutine
// has read its last zxid for the setWatches request, or will not read it.
type gatedConn struct {
	net.Conn

	// Touched only by the reads of the handshake, on the library's
	// connection goroutine.
	header [4]byte
	seen   int   // bytes of the handshake answer read so far
	loop   int64 // the connection goroutine's id, from the first read

	shaken    atomic.Bool // the handshake answer has been read
	open      chan struct{}
	closeOpen sync.Once
}

func gate(c net.Conn) *gatedConn { return &gatedConn{Conn: c, open: make(chan struct{})} }

func (g *gatedConn) opened() bool {
	select {
	case <-g.open:
		return true
	default:
		return false
	}
}

// openGate opens the gate, counting why if it was closed.
func (g *gatedConn) openGate(why loopState) {
	g.closeOpen.Do(func() {
		gateOpenings.record(why)
		close(g.open)
	})
}

// Read counts the handshake answer through (its length prefix, then that
// many bytes) and makes the first read after it wait at the gate.
func (g *gatedConn) Read(b []byte) (int, error) {
	if g.opened() {
		return g.Conn.Read(b)
	}
	if !g.shaken.Load() {
		if g.seen == 0 {
			g.loop = goroutineID()
		}
		if want := g.handshakeLeft(); len(b) > want {
			b = b[:want] // never read a reply in with the handshake
		}
		n, err := g.Conn.Read(b)
		g.account(b[:n])
		return n, err
	}
	g.await()
	return g.Conn.Read(b)
}

// handshakeLeft is how many bytes of the handshake answer are still unread.
func (g *gatedConn) handshakeLeft() int {
	if g.seen < len(g.header) {
		return len(g.header) - g.seen
	}
	return len(g.header) + int(binary.BigEndian.Uint32(g.header[:])) - g.seen
}

func (g *gatedConn) account(b []byte) {
	if g.seen < len(g.header) {
		copy(g.header[g.seen:], b)
	}
	g.seen += len(b)
	if g.seen >= len(g.header) && g.handshakeLeft() == 0 {
		g.shaken.Store(true)
	}
}

// opSetWatches is the request's opcode in ZooKeeper's protocol.
const opSetWatches = 101

// Write opens the gate when it carries a setWatches request: the library
// writes one only after its connection goroutine read the zxid into it.
func (g *gatedConn) Write(b []byte) (int, error) {
	if !g.opened() && g.shaken.Load() && len(b) >= 12 && int32(binary.BigEndian.Uint32(b[8:12])) == opSetWatches {
		n, err := g.Conn.Write(b)
		g.openGate(loopWroteWatches)
		return n, err
	}
	return g.Conn.Write(b)
}

// Close opens the gate too, so that a waiting read meets the closed
// connection.
func (g *gatedConn) Close() error {
	err := g.Conn.Close()
	g.openGate(loopClosed)
	return err
}

// await blocks until the gate is open, opening it when the connection
// goroutine's stack shows it will not read the zxid on this connection.
func (g *gatedConn) await() {
	deadline := time.Now().Add(gateWait)
	buf := make([]byte, 64<<10)
	for pause := 50 * time.Microsecond; ; pause = min(2*pause, 10*time.Millisecond) {
		select {
		case <-g.open:
			return
		case <-time.After(pause):
		}
		buf = stackDump(buf)
		state := libraryLoopState(buf, g.loop)
		if state.passed() || time.Now().After(deadline) {
			if !state.passed() {
				state = loopTimedOut
			}
			g.openGate(state)
			return
		}
	}
}

// loopState is where the library's connection goroutine stands, as the gate
// sees it.
type loopState int

const (
	loopBusy         loopState = iota // before or in sendSetWatches
	loopSending                       // its goroutine sending watches exists
	loopWroteWatches                  // the setWatches request was written
	loopParked                        // past sendSetWatches, no watches sent
	loopReconnecting                  // dialling the next connection
	loopGone                          // no such goroutine: the Conn closed
	loopTimedOut                      // none of these within gateWait
	loopClosed                        // the connection closed first
	loopStates
)

// passed reports whether the gate may open without a setWatches request.
func (s loopState) passed() bool {
	return s == loopParked || s == loopReconnecting || s == loopGone
}

// gateOpenings counts how each gate opened, for the tests: they check that
// the gate met both a reconnection's setWatches and a first connection's
// parked goroutine, which a new Go or library version could silently break.
var gateOpenings openingCounts

type openingCounts [loopStates]atomic.Int64

func (o *openingCounts) record(s loopState) { o[s].Add(1) }

// stackDump returns runtime.Stack of every goroutine, in buf if it fits.
func stackDump(buf []byte) []byte {
	for {
		buf = buf[:cap(buf)]
		if n := runtime.Stack(buf, true); n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// libraryLoopState finds, in a runtime.Stack dump of every goroutine, the
// library's connection goroutine loop and says where it stands. A goroutine
// sending watches that loop started means the zxid was read, and the gate
// opens on its request's Write.
func libraryLoopState(dump []byte, loop int64) loopState {
	sender := []byte("created by github.com/go-zookeeper/zk.(*Conn).sendSetWatches in goroutine " + strconv.FormatInt(loop, 10) + "\n")
	var block []byte
	for _, b := range bytes.Split(dump, []byte("\n\n")) {
		b = append(bytes.TrimSpace(b), '\n')
		if bytes.Contains(b, sender) {
			return loopSending
		}
		if headerID(b) == loop {
			block = b
		}
	}
	switch {
	case block == nil || !bytes.Contains(block, []byte("github.com/go-zookeeper/zk.(*Conn).loop(")):
		return loopGone
	case bytes.Contains(block, []byte("sync.(*WaitGroup).Wait(")):
		return loopParked
	case bytes.Contains(block, []byte("github.com/go-zookeeper/zk.(*Conn).connect(")):
		return loopReconnecting
	}
	return loopBusy
}

// goroutineID returns the id of the calling goroutine, from its stack header.
func goroutineID() int64 {
	var buf [64]byte
	return headerID(buf[:runtime.Stack(buf[:], false)])
}

// headerID parses the id from a stack block's "goroutine N [state]:" line,
// or returns -1.
func headerID(block []byte) int64 {
	rest, ok := bytes.CutPrefix(block, []byte("goroutine "))
	if !ok {
		return -1
	}
	digits, _, _ := bytes.Cut(rest, []byte(" "))
	id, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil {
		return -1
	}
	return id
}
