package zkcoord

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/zkcoord/zktest"
)

func TestDialCreatesChroot(t *testing.T) {
	connect := zktest.Start(t)
	c := dial(t, testConfig(connect+"/a/b"))
	if err := c.SetPersistent("/x", []byte("1")); err != nil {
		t.Fatal(err)
	}
	outer := dial(t, testConfig(connect))
	got, err := outer.Get("/a/b/x")
	if err != nil || string(got) != "1" {
		t.Fatalf("node written under chroot /a/b: Get(/a/b/x) = %q, %v", got, err)
	}
	root, err := c.Children("/")
	if err != nil || !reflect.DeepEqual(root, []string{"x"}) {
		t.Fatalf("Children(/) in chroot = %v, %v", root, err)
	}
}

func TestDialFailsWithoutServer(t *testing.T) {
	// A port nothing listens on: the connection timeout must end the wait.
	cfg := testConfig("127.0.0.1:1")
	cfg.ConnectionTimeout = 300 * time.Millisecond
	_, err := Dial(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "no ZooKeeper session") {
		t.Fatalf("Dial to a dead port = %v, want a connection-timeout error", err)
	}
	if _, err := Dial(context.Background(), Config{Connect: "a:1/../x"}); err == nil {
		t.Fatal("Dial with a bad chroot succeeded")
	}
}

func TestBadPaths(t *testing.T) {
	c := dial(t, testConfig(zktest.Start(t)))
	for _, p := range []string{"", "x", "/a/", "/a//b", "/a/../b", "/a/\x00"} {
		if _, err := c.Get(p); err == nil || errors.Is(err, ErrNoNode) {
			t.Errorf("Get(%q) = %v, want a path error", p, err)
		}
	}
}

func TestWatchChildren(t *testing.T) {
	connect := zktest.Start(t)
	c := dial(t, testConfig(connect))
	other := dial(t, testConfig(connect))

	// A missing parent: no children, and a watch for its creation.
	names, err := c.WatchChildren("/p")
	if err != nil || names != nil {
		t.Fatalf("WatchChildren(missing) = %v, %v", names, err)
	}
	if err := other.EnsurePath("/p"); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, c); ev != (Event{Type: EventCreated, Path: "/p"}) {
		t.Fatalf("event = %v, want created /p", ev)
	}

	if names, err = c.WatchChildren("/p"); err != nil || len(names) != 0 {
		t.Fatalf("WatchChildren(/p) = %v, %v", names, err)
	}
	// Reading again must not add a second watch: one change, one event.
	if _, err = c.WatchChildren("/p"); err != nil {
		t.Fatal(err)
	}
	if err := other.CreateEphemeral("/p/a", nil); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, c); ev != (Event{Type: EventChildren, Path: "/p"}) {
		t.Fatalf("event = %v, want children /p", ev)
	}
	// The watch fired and is not re-armed: further changes are silent.
	if err := other.CreateEphemeral("/p/b", nil); err != nil {
		t.Fatal(err)
	}
	expectNoEvent(t, c, other)

	names, err = c.WatchChildren("/p")
	sort.Strings(names)
	if err != nil || !reflect.DeepEqual(names, []string{"a", "b"}) {
		t.Fatalf("WatchChildren(/p) = %v, %v", names, err)
	}
	if err := other.Close(); err != nil { // its ephemeral children go
		t.Fatal(err)
	}
	if ev := nextEvent(t, c); ev != (Event{Type: EventChildren, Path: "/p"}) {
		t.Fatalf("event = %v, want children /p", ev)
	}
}

func TestWatchData(t *testing.T) {
	connect := zktest.Start(t)
	c := dial(t, testConfig(connect))
	other := dial(t, testConfig(connect))

	if _, ok, err := c.WatchData("/d"); ok || err != nil {
		t.Fatalf("WatchData(missing) = %v, %v", ok, err)
	}
	if err := other.SetPersistent("/d", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, c); ev != (Event{Type: EventCreated, Path: "/d"}) {
		t.Fatalf("event = %v, want created /d", ev)
	}
	data, ok, err := c.WatchData("/d")
	if !ok || err != nil || string(data) != "1" {
		t.Fatalf("WatchData(/d) = %q, %v, %v", data, ok, err)
	}
	if err := other.SetPersistent("/d", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, c); ev != (Event{Type: EventData, Path: "/d"}) {
		t.Fatalf("event = %v, want data /d", ev)
	}
	if _, _, err := c.WatchData("/d"); err != nil {
		t.Fatal(err)
	}
	if err := other.Delete("/d"); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, c); ev != (Event{Type: EventDeleted, Path: "/d"}) {
		t.Fatalf("event = %v, want deleted /d", ev)
	}
}

func TestCreateEphemeral(t *testing.T) {
	connect := zktest.Start(t)
	a := dial(t, testConfig(connect))
	b := dial(t, testConfig(connect))

	if err := a.CreateEphemeral("/x/y/node", []byte("a")); err != nil {
		t.Fatalf("CreateEphemeral with missing parents: %v", err)
	}
	// Again from the owning session: fine (a reply lost to a connection loss).
	if err := a.CreateEphemeral("/x/y/node", []byte("a")); err != nil {
		t.Fatalf("CreateEphemeral again by the owner: %v", err)
	}
	// Another session, even with the same data: refused, naming the holder.
	err := b.CreateEphemeral("/x/y/node", []byte("a"))
	var ne *NodeExistsError
	if !errors.As(err, &ne) || !errors.Is(err, ErrNodeExists) || string(ne.Data) != "a" || ne.Owner != a.SessionID() {
		t.Fatalf("CreateEphemeral by another session = %v, want *NodeExistsError owned by %#x", err, a.SessionID())
	}
	// Only the owner's DeleteOwned removes it.
	if deleted, err := b.DeleteOwned("/x/y/node"); deleted || err != nil {
		t.Fatalf("DeleteOwned by another session = %v, %v", deleted, err)
	}
	if deleted, err := a.DeleteOwned("/x/y/node"); !deleted || err != nil {
		t.Fatalf("DeleteOwned by the owner = %v, %v", deleted, err)
	}
	if err := b.CreateEphemeral("/x/y/node", []byte("b")); err != nil {
		t.Fatalf("CreateEphemeral after release: %v", err)
	}
	// Closing the session removes its ephemeral nodes at once.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Exists("/x/y/node"); ok || err != nil {
		t.Fatalf("Exists after the owner closed = %v, %v", ok, err)
	}
	if _, err := b.Get("/x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get on a closed Conn = %v, want ErrClosed", err)
	}
}

func TestPersistentNodes(t *testing.T) {
	c := dial(t, testConfig(zktest.Start(t)))
	if err := c.SetPersistent("/a/b/c", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPersistent("/a/b/c", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get("/a/b/c"); err != nil || string(got) != "2" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if err := c.EnsurePath("/a/b"); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("/a"); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("Delete(non-empty) = %v, want ErrNotEmpty", err)
	}
	if err := c.DeleteAll("/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get("/a/b/c"); !errors.Is(err, ErrNoNode) {
		t.Fatalf("Get after DeleteAll = %v, want ErrNoNode", err)
	}
	if err := c.Delete("/a"); err != nil {
		t.Fatalf("Delete(missing) = %v, want nil", err)
	}
	if data, ok, err := c.GetMaybe("/a"); data != nil || ok || err != nil {
		t.Fatalf("GetMaybe(missing) = %q, %v, %v", data, ok, err)
	}
}

// TestSessionExpiry forces a real expiry: the link to the server is cut
// until the server expires the session, then healed. The Conn must report
// the expiry and the new session, and watches must work in the new session.
func TestSessionExpiry(t *testing.T) {
	connect := zktest.Start(t)
	link := zktest.NewLink()
	cfg := testConfig(connect)
	cfg.Dial = link.Dial
	c := dial(t, cfg)
	observer := dial(t, testConfig(connect))

	if err := c.CreateEphemeral("/eph", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WatchChildren("/w"); err != nil {
		t.Fatal(err)
	}
	oldSession := c.SessionID()
	expire(t, link, observer, "/eph")

	if ev := nextEvent(t, c); ev.Type != EventSessionExpired {
		t.Fatalf("event = %v, want session-expired", ev)
	}
	if ev := nextEvent(t, c); ev.Type != EventNewSession {
		t.Fatalf("event = %v, want new-session", ev)
	}
	if c.SessionID() == oldSession || c.SessionID() == 0 {
		t.Fatalf("session id %#x after expiry, old %#x", c.SessionID(), oldSession)
	}
	// The old watch is gone with the session; a new one works.
	if _, err := c.WatchChildren("/w"); err != nil {
		t.Fatal(err)
	}
	if err := observer.EnsurePath("/w"); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, c); ev != (Event{Type: EventCreated, Path: "/w"}) {
		t.Fatalf("event = %v, want created /w", ev)
	}
}
