package zkcoord

import (
	"testing"
	"time"

	"github.com/netdb11/kafka/zkcoord/zktest"
)

// next returns l's next event or fails the test.
func next(t *testing.T, l *Listener) Event {
	t.Helper()
	select {
	case ev, ok := <-l.Events():
		if !ok {
			t.Fatal("listener closed")
		}
		return ev
	case <-time.After(testTimeout):
		t.Fatalf("no event within %v", testTimeout)
	}
	return Event{}
}

// TestListenersShareSession: two roles on one session each get every watch
// firing (also the one the other armed) and every session change, in order;
// a closed listener gets nothing more, and Close of the Conn closes the rest.
func TestListenersShareSession(t *testing.T) {
	connect := zktest.Start(t)
	link := zktest.NewLink()
	cfg := testConfig(connect)
	cfg.Dial = link.Dial
	c := dial(t, cfg)
	observer := dial(t, testConfig(connect))
	a, b := c.Listen(), c.Listen()
	if _, _, err := c.WatchData("/w"); err != nil {
		t.Fatal(err)
	}
	if err := observer.SetPersistent("/w", []byte("1")); err != nil {
		t.Fatal(err)
	}
	want := Event{Type: EventCreated, Path: "/w"}
	for name, l := range map[string]*Listener{"a": a, "b": b} {
		if got := next(t, l); got != want {
			t.Fatalf("listener %s: got %v, want %v", name, got, want)
		}
	}
	if err := c.CreateEphemeral("/eph", nil); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, ok := <-b.Events(); ok {
		t.Fatal("a closed listener delivered an event")
	}
	expire(t, link, observer, "/eph")
	var got []EventType
	for len(got) == 0 || got[len(got)-1] != EventNewSession {
		got = append(got, next(t, a).Type)
	}
	wantSeq := []EventType{EventDisconnected, EventSessionExpired, EventNewSession}
	if len(got) != len(wantSeq) {
		t.Fatalf("session events %v, want %v", got, wantSeq)
	}
	for i := range got {
		if got[i] != wantSeq[i] {
			t.Fatalf("session events %v, want %v", got, wantSeq)
		}
	}
	c.Close()
	if _, ok := <-a.Events(); ok {
		t.Fatal("Close of the Conn left a listener open")
	}
}
