package zkcoord

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/zkcoord/zktest"

	"github.com/netdb11/kafka/broker/wire"
)

func registerBroker(t *testing.T, cfg Config, id wire.BrokerID, host string, port int) *BrokerRegistration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	r, err := RegisterBroker(ctx, cfg, id, host, port)
	if err != nil {
		t.Fatalf("RegisterBroker(%d): %v", id, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestBrokerRegistrationValues(t *testing.T) {
	connect := zktest.Start(t)
	r := registerBroker(t, testConfig(connect), 7, "127.0.0.1", 9092)
	if err := r.RegisterTopic("events", 4); err != nil {
		t.Fatal(err)
	}
	c := dial(t, testConfig(connect))

	v, err := c.Get("/brokers/ids/7")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^127\.0\.0\.1-\d{13}:127\.0\.0\.1:9092$`).Match(v) {
		t.Fatalf("/brokers/ids/7 = %q, want 0.7's creatorId:host:port", v)
	}
	if v, err := c.Get("/brokers/topics/events/7"); err != nil || string(v) != "4" {
		t.Fatalf("/brokers/topics/events/7 = %q, %v; want \"4\"", v, err)
	}
	brokers, err := RegistryOn(c).Brokers(false)
	if err != nil || len(brokers) != 1 || brokers[7].Port != 9092 || brokers[7].Host != "127.0.0.1" {
		t.Fatalf("Brokers() = %v, %v", brokers, err)
	}
	names, err := RegistryOn(c).PartitionNames("events", false)
	if err != nil || strings.Join(names, ",") != "7-0,7-1,7-2,7-3" {
		t.Fatalf("PartitionNames = %v, %v", names, err)
	}
	if err := r.RegisterTopic("../x", 1); err == nil {
		t.Fatal("RegisterTopic(../x) succeeded")
	}
	if err := r.RegisterTopic("t", 0); err == nil {
		t.Fatal("RegisterTopic with 0 partitions succeeded")
	}

	// Close removes everything at once.
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/brokers/ids/7", "/brokers/topics/events/7"} {
		if ok, err := c.Exists(p); ok || err != nil {
			t.Fatalf("%s after Close: exists=%v err=%v", p, ok, err)
		}
	}
}

func TestBrokerIDInUse(t *testing.T) {
	connect := zktest.Start(t)
	registerBroker(t, testConfig(connect), 1, "127.0.0.1", 9092)
	_, err := RegisterBroker(context.Background(), testConfig(connect), 1, "127.0.0.1", 9093)
	if !errors.Is(err, ErrBrokerIDInUse) || !strings.Contains(err.Error(), "/brokers/ids/1") ||
		!strings.Contains(err.Error(), ":127.0.0.1:9092") {
		t.Fatalf("second broker with id 1 = %v, want ErrBrokerIDInUse naming the registration", err)
	}
}

// TestBrokerRestartTakesOverItsStaleRegistration: a broker restarted faster
// than its session timeout finds its own previous registration (same
// host:port) and removes it, instead of refusing to start (0.8) or waiting
// for the old session to expire (before the soak's seed 113): the new
// registration is in place while the old session still lives (its other
// ephemeral node is still there), created after the old one.
func TestBrokerRestartTakesOverItsStaleRegistration(t *testing.T) {
	connect := zktest.Start(t)
	link := zktest.NewLink()
	cfg := testConfig(connect)
	cfg.Dial = link.Dial
	old := registerBroker(t, cfg, 2, "127.0.0.1", 9092)
	if err := old.conn.CreateEphemeral("/old-session-alive", nil); err != nil {
		t.Fatal(err)
	}
	if err := old.RegisterTopic("t", 1); err != nil {
		t.Fatal(err)
	}
	c := dial(t, testConfig(connect))
	oldZxid, _, err := ReplicationOn(c).BrokerEpoch(2)
	if err != nil {
		t.Fatal(err)
	}
	link.Cut() // the old broker "dies": its session will expire

	restarted := registerBroker(t, testConfig(connect), 2, "127.0.0.1", 9092)
	if ok, err := c.Exists("/old-session-alive"); err != nil || !ok {
		t.Fatalf("the old session ended (%v, %v) before the restarted broker registered: it waited for the expiry", ok, err)
	}
	v, err := c.Get("/brokers/ids/2")
	if err != nil || string(v) != restarted.Info().String() {
		t.Fatalf("/brokers/ids/2 = %q, %v; want the restarted broker's %q", v, err, restarted.Info())
	}
	if newZxid, _, err := ReplicationOn(c).BrokerEpoch(2); err != nil || newZxid <= oldZxid {
		t.Fatalf("the restarted registration's czxid %d (%v), want above the old one's %d", newZxid, err, oldZxid)
	}
	// The topic node the old session left is taken over too (a 2011 broker
	// registers its topics as it starts; before, it found the old node and
	// exited: TestKnownSchedule's lose-tail under make test).
	if err := restarted.RegisterTopic("t", 2); err != nil {
		t.Fatalf("registering a topic the old session holds: %v", err)
	}
	if v, err := c.Get(TopicBrokerPath("t", 2)); err != nil || string(v) != "2" {
		t.Fatalf("%s = %q, %v; want the restarted broker's 2", TopicBrokerPath("t", 2), v, err)
	}
	if old.Info().CreatorID == restarted.Info().CreatorID {
		// Same millisecond is possible but then the test proves nothing new.
		t.Logf("creator ids equal: %s", old.Info().CreatorID)
	}
}

// TestBrokerReregistersAfterExpiry forces the broker's session to expire and
// checks that its id and topics come back with the same values in a new session.
func TestBrokerReregistersAfterExpiry(t *testing.T) {
	connect := zktest.Start(t)
	link := zktest.NewLink()
	cfg := testConfig(connect)
	cfg.Dial = link.Dial
	r := registerBroker(t, cfg, 3, "127.0.0.1", 9092)
	for _, topic := range []string{"a", "b"} {
		if err := r.RegisterTopic(topic, 2); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.RegisterAdmin("127.0.0.1:9100"); err != nil {
		t.Fatal(err)
	}
	observer := dial(t, testConfig(connect))
	oldSession := r.conn.SessionID()

	expire(t, link, observer, "/brokers/ids/3")

	for _, p := range []string{"/brokers/ids/3", "/brokers/topics/a/3", "/brokers/topics/b/3", "/brokers/admin/3"} {
		wait.Within(t, testTimeout, p+" to be registered again", func() bool {
			ok, err := observer.Exists(p)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		})
	}
	if v, err := observer.Get("/brokers/ids/3"); err != nil || string(v) != r.Info().String() {
		t.Fatalf("/brokers/ids/3 = %q, %v; want %q", v, err, r.Info())
	}
	if eps, err := RegistryOn(observer).AdminEndpoints(); err != nil || len(eps) != 1 || eps[3] != "127.0.0.1:9100" {
		t.Fatalf("AdminEndpoints() = %v, %v", eps, err)
	}
	if err := r.RegisterAdmin("nohost"); err == nil {
		t.Fatal("RegisterAdmin(nohost) succeeded")
	}
	if r.conn.SessionID() == oldSession {
		t.Fatal("session id unchanged after expiry")
	}
	// A topic registered in the new session works as before.
	if err := r.RegisterTopic("c", 1); err != nil {
		t.Fatal(err)
	}
	if v, err := observer.Get("/brokers/topics/c/3"); err != nil || string(v) != "1" {
		t.Fatalf("/brokers/topics/c/3 = %q, %v", v, err)
	}
}

// TestRegistrationOnSharedSession: a registration on a session shared with
// other roles (RegisterBrokerOn) lives in that session: after its expiry
// it is written again in the new one, owned by it, while another role's
// listener on the session sees the same expiry; Close deletes the
// registration's nodes and leaves the session open.
func TestRegistrationOnSharedSession(t *testing.T) {
	connect := zktest.Start(t)
	link := zktest.NewLink()
	cfg := testConfig(connect)
	cfg.Dial = link.Dial
	sess := dial(t, cfg)
	other := sess.Listen() // another role on the session
	defer other.Close()
	observer := dial(t, testConfig(connect))
	r, err := RegisterBrokerOn(context.Background(), sess, 3, "127.0.0.1", 9092)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterTopic("events", 2); err != nil {
		t.Fatal(err)
	}
	owner := func(p string) int64 {
		s, ok, err := observer.EphemeralOwner(p)
		if err != nil || !ok {
			return 0
		}
		return s
	}
	old := sess.SessionID()
	if got := owner(BrokerPath(3)); got != old {
		t.Fatalf("/brokers/ids/3 owned by %#x, want the shared session %#x", got, old)
	}
	expire(t, link, observer, BrokerPath(3))
	for ev := next(t, other); ev.Type != EventNewSession; ev = next(t, other) {
	}
	wait.Within(t, testTimeout, "the registration in the new session", func() bool {
		s := sess.SessionID()
		return s != old && owner(BrokerPath(3)) == s && owner(TopicBrokerPath("events", 3)) == s
	})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{BrokerPath(3), TopicBrokerPath("events", 3)} {
		if ok, err := observer.Exists(p); ok || err != nil {
			t.Fatalf("%s after Close: exists=%v err=%v", p, ok, err)
		}
	}
	if _, err := sess.Exists("/"); err != nil {
		t.Fatalf("the shared session after the registration's Close: %v", err)
	}
}

// TestLogEndsWrittenBeforeEachRegistration: a Registrar with SetLogEnds
// writes /brokers/logends/<id> before /brokers/ids/<id>, in its first
// session and again, read afresh, in the session after an expiry, so
// that a controller that sees the registration reads the logs as they
// were when the broker registered (the controller's rule for an ISR none
// of whose members is known to be intact).
func TestLogEndsWrittenBeforeEachRegistration(t *testing.T) {
	connect := zktest.Start(t)
	link := zktest.NewLink()
	cfg := testConfig(connect)
	cfg.Dial = link.Dial
	observer := dial(t, testConfig(connect))
	var mu sync.Mutex
	calls, early := 0, 0
	r := NewRegistrar(cfg)
	t.Cleanup(func() { r.Close() })
	r.SetLogEnds(func() []LogEnd {
		if ok, err := observer.Exists(BrokerPath(3)); err != nil || ok {
			mu.Lock()
			early++ // the registration existed before the log ends were read
			mu.Unlock()
		}
		mu.Lock()
		defer mu.Unlock()
		calls++
		return []LogEnd{{Topic: "t", Partition: 1, End: int64(100 * calls), Recovered: calls == 1}}
	})
	if err := r.Register(3, "127.0.0.1", 9092); err != nil {
		t.Fatal(err)
	}
	tp := wire.TopicPartition{Topic: "t", Partition: 1}
	ends, ok, err := ReplicationOn(observer).LogEnds(3)
	if err != nil || !ok || ends[tp] != (LogEnd{Topic: "t", Partition: 1, End: 100, Recovered: true}) {
		t.Fatalf("LogEnds(3) = %v, %v, %v; want t-1 at 100, recovered", ends, ok, err)
	}
	expire(t, link, observer, BrokerPath(3))
	wait.Within(t, testTimeout, "the broker registered again with its log ends read afresh", func() bool {
		ok, err := observer.Exists(BrokerPath(3))
		if err != nil || !ok {
			return false
		}
		ends, ok, err := ReplicationOn(observer).LogEnds(3)
		return err == nil && ok && ends[tp].End == 200 && !ends[tp].Recovered
	})
	mu.Lock()
	defer mu.Unlock()
	if early != 0 {
		t.Fatalf("%d of %d readings of the log ends came after /brokers/ids/3 was written", early, calls)
	}
	if _, ok, err := ReplicationOn(observer).LogEnds(4); ok || err != nil {
		t.Fatalf("LogEnds(4) of a broker that wrote none: ok=%v err=%v", ok, err)
	}
}
