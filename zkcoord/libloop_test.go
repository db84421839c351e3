package zkcoord

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netdb11/kafka/zkcoord/zktest"
)

// loopBlock is the library's connection goroutine in a runtime.Stack dump,
// shaped as Go prints it, with frames above its loop.
func loopBlock(id string, frames ...string) string {
	var b strings.Builder
	b.WriteString("goroutine " + id + " [state]:\n")
	for _, f := range frames {
		b.WriteString(f + "(0xc000010000)\n\t/src/file.go:1 +0x1\n")
	}
	b.WriteString("github.com/go-zookeeper/zk.(*Conn).loop(0xc000010000, {0x1, 0x2})\n\t/mod/zk/conn.go:485 +0x559\n")
	b.WriteString("github.com/go-zookeeper/zk.Connect.func1()\n\t/mod/zk/conn.go:224 +0x4b\n")
	b.WriteString("created by github.com/go-zookeeper/zk.Connect in goroutine 1\n\t/mod/zk/conn.go:223 +0x8e7")
	return b.String()
}

// senderBlock is the goroutine that sendSetWatches starts in goroutine loop.
func senderBlock(id, loop string) string {
	return "goroutine " + id + " [chan receive]:\n" +
		"github.com/go-zookeeper/zk.(*Conn).request(...)\n\t/mod/zk/conn.go:1000 +0x1\n" +
		"github.com/go-zookeeper/zk.(*Conn).sendSetWatches.func1()\n\t/mod/zk/conn.go:650 +0x1\n" +
		"created by github.com/go-zookeeper/zk.(*Conn).sendSetWatches in goroutine " + loop + "\n\t/mod/zk/conn.go:642 +0x1"
}

func TestLibraryLoopState(t *testing.T) {
	const other = "goroutine 3 [select]:\nmain.f()\n\t/src/main.go:1 +0x1\ncreated by main.main in goroutine 1\n\t/src/main.go:2 +0x2"
	parked := loopBlock("41", "sync.runtime_SemacquireWaitGroup", "sync.(*WaitGroup).Wait")
	inSetWatches := loopBlock("41", "sync.(*Mutex).Lock", "github.com/go-zookeeper/zk.(*Conn).sendSetWatches")
	between := loopBlock("41")
	reconnecting := loopBlock("41", "net.(*Dialer).DialContext", "github.com/go-zookeeper/zk.(*Conn).connect")
	othersParked := loopBlock("50", "sync.(*WaitGroup).Wait")
	for _, tc := range []struct {
		name string
		dump []string
		want loopState
	}{
		{"gone", []string{other, othersParked}, loopGone},
		{"parked", []string{other, parked}, loopParked},
		{"in sendSetWatches", []string{inSetWatches, other}, loopBusy},
		{"runnable between statements", []string{between}, loopBusy},
		{"reconnecting", []string{reconnecting}, loopReconnecting},
		{"parked with its watches being sent", []string{parked, senderBlock("60", "41")}, loopSending},
		{"parked, another loop's watches being sent", []string{parked, senderBlock("60", "50")}, loopParked},
		{"another loop parked, ours not", []string{othersParked, inSetWatches}, loopBusy},
	} {
		if got := libraryLoopState([]byte(strings.Join(tc.dump, "\n\n")+"\n"), 41); got != tc.want {
			t.Errorf("%s: libraryLoopState = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestReconnectWithWatches breaks a session's connection again and again
// while it holds watches and other goroutines' requests are in flight. The
// library reconnects within the session and sends the watches again
// (setWatches), reading its last zxid while the new connection's receive
// goroutine may already take the answer to a request queued before. Under
// the race detector, without the gate, that read and the receive
// goroutine's write of the zxid make this test fail (as they made CI fail
// in other packages' tests). The watches must still fire, and the gate must
// have met both the first connections (no watches: the goroutine parked)
// and the reconnections (setWatches written): if a new Go or library
// version printed stacks or packets differently, the gate would silently
// open on its timeout instead.
func TestReconnectWithWatches(t *testing.T) {
	connect := zktest.Start(t)
	before := snapshotOpenings()
	link := zktest.NewLink()
	// The server twice: the library reconnects to the next address at once
	// and sleeps a second only when it has tried them all.
	server, chroot, _ := strings.Cut(connect, "/")
	cfg := testConfig(server + "," + server + "/" + chroot)
	cfg.Dial = link.Dial
	c := dial(t, cfg)
	writer := dial(t, testConfig(connect))
	l := c.Listen()
	defer l.Close()
	next := func() Event {
		t.Helper()
		select {
		case ev := <-l.Events():
			return ev
		case <-time.After(testTimeout):
			t.Fatalf("no event within %v", testTimeout)
			return Event{}
		}
	}
	for _, p := range []string{"/w", "/d"} {
		if err := writer.EnsurePath(p); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var busy sync.WaitGroup
	for range 4 {
		busy.Add(1)
		go func() {
			defer busy.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = c.Exists("/d") // fails while disconnected; only its traffic matters
			}
		}()
	}
	defer func() { close(stop); busy.Wait() }()

	const rounds = 20
	for i := range rounds {
		if _, err := c.WatchChildren("/w"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.WatchData("/d"); err != nil {
			t.Fatal(err)
		}
		link.Drop()
		if ev := next(); ev.Type != EventDisconnected {
			t.Fatalf("round %d: event = %v, want disconnected", i, ev)
		}
		if ev := next(); ev.Type != EventReconnected {
			t.Fatalf("round %d: event = %v, want reconnected", i, ev)
		}
		// Both watches survived the reconnection.
		if err := writer.EnsurePath(fmt.Sprintf("/w/c%d", i)); err != nil {
			t.Fatal(err)
		}
		if ev := next(); ev != (Event{Type: EventChildren, Path: "/w"}) {
			t.Fatalf("round %d: event = %v, want children-changed /w", i, ev)
		}
		if err := writer.SetPersistent("/d", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if ev := next(); ev != (Event{Type: EventData, Path: "/d"}) {
			t.Fatalf("round %d: event = %v, want data-changed /d", i, ev)
		}
	}
	if !raceEnabled {
		return
	}
	after := snapshotOpenings()
	t.Logf("gate openings: before %v after %v", before, after)
	if n := after[loopWroteWatches] - before[loopWroteWatches]; n < rounds {
		t.Errorf("the gate opened on a setWatches request %d times in %d reconnections with watches", n, rounds)
	}
	if n := after[loopParked] - before[loopParked]; n < 2 {
		t.Errorf("the gate found the library's goroutine parked %d times; want the two first connections", n)
	}
	if n := after[loopTimedOut] - before[loopTimedOut]; n != 0 {
		t.Errorf("the gate timed out %d times", n)
	}
}

func snapshotOpenings() [loopStates]int64 {
	var s [loopStates]int64
	for i := range s {
		s[i] = gateOpenings[i].Load()
	}
	return s
}
