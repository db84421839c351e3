package replica

import (
	"context"
	"errors"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestEpochsAssignAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), EpochsFile)
	e, err := OpenEpochs(path)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		epoch int32
		start Offset
	}{{0, 0}, {0, 50}, {1, 100}, {1, 120}, {3, 200}, {2, 300}}
	for _, s := range steps {
		if err := e.Assign(s.epoch, s.start); err != nil {
			t.Fatal(err)
		}
	}
	want := []EpochEntry{{0, 0}, {1, 100}, {3, 200}}
	if got := e.Entries(); !reflect.DeepEqual(got, want) {
		t.Fatalf("entries = %v, want %v", got, want)
	}
	// An epoch whose predecessor wrote nothing replaces it.
	if err := e.Assign(4, 200); err != nil {
		t.Fatal(err)
	}
	want = []EpochEntry{{0, 0}, {1, 100}, {4, 200}}
	re, err := OpenEpochs(path)
	if err != nil || !reflect.DeepEqual(re.Entries(), want) {
		t.Fatalf("reopened = %v, %v; want %v", re.Entries(), err, want)
	}
	if err := re.TruncateFrom(100); err != nil {
		t.Fatal(err)
	}
	if got := re.Entries(); !reflect.DeepEqual(got, []EpochEntry{{0, 0}}) {
		t.Fatalf("after TruncateFrom(100) = %v", got)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left behind: %v", err)
	}
}

func TestEpochsEndOffsetFor(t *testing.T) {
	e, _ := OpenEpochs(filepath.Join(t.TempDir(), EpochsFile))
	for _, en := range []EpochEntry{{2, 10}, {4, 40}, {5, 70}} {
		if err := e.Assign(en.Epoch, en.Start); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		ask   int32
		epoch int32
		end   Offset
	}{{1, UndefinedEpoch, -1}, {2, 2, 40}, {3, 2, 40}, {4, 4, 70}, {5, 5, 99}, {9, 5, 99}} {
		ep, end := e.EndOffsetFor(c.ask, 99)
		if ep != c.epoch || end != c.end {
			t.Errorf("EndOffsetFor(%d) = %d, %d; want %d, %d", c.ask, ep, end, c.epoch, c.end)
		}
	}
}

func TestBadEpochsFile(t *testing.T) {
	for _, bad := range []string{"", "1\n0\n", "0\n2\n0 0\n", "0\n2\n1 10\n0 20\n", "0\n1\nx y\n", "0\n1\n0 0\n9 9\n"} {
		path := filepath.Join(t.TempDir(), EpochsFile)
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenEpochs(path); !errors.Is(err, ErrBadEpochsFile) {
			t.Errorf("OpenEpochs(%q) = %v, want ErrBadEpochsFile", bad, err)
		}
	}
}

var t0 = time.Unix(1_700_000_000, 0)

func newTestLeader() *LeaderState {
	return NewLeaderState(LeaderConfig{ID: 1, Replicas: []BrokerID{1, 2, 3}, ISR: []BrokerID{1, 2, 3},
		Epoch: 5, EpochStart: 100, LEO: 100, HW: 80, LagTime: 10 * time.Second, Now: t0})
}

// TestLeaderHW: the HW is the smallest LEO over the ISR and never moves back.
func TestLeaderHW(t *testing.T) {
	l := newTestLeader()
	if l.HW() != 80 {
		t.Fatalf("initial HW %d", l.HW())
	}
	l.Appended(200)
	l.FollowerFetch(2, 200, t0)
	if l.HW() != 80 {
		t.Fatalf("HW %d moved before follower 3 fetched", l.HW())
	}
	l.FollowerFetch(3, 150, t0)
	if l.HW() != 150 {
		t.Fatalf("HW = %d, want 150", l.HW())
	}
	// A follower reporting a smaller LEO (it truncated) does not move it back.
	l.FollowerFetch(3, 120, t0)
	if l.HW() != 150 {
		t.Fatalf("HW moved back to %d", l.HW())
	}
	// Shrinking the ISR to the leader and 2 lets it advance.
	l.SetISR([]BrokerID{1, 2})
	if l.HW() != 200 {
		t.Fatalf("HW = %d after shrink, want 200", l.HW())
	}
}

// TestLeaderShrinkByTime: a follower leaves the ISR after lag time without
// catching up, however little it lags in bytes; a fetching, caught-up one
// never does.
func TestLeaderShrinkByTime(t *testing.T) {
	l := newTestLeader()
	now := t0
	for i := 0; i < 30; i++ {
		now = now.Add(time.Second)
		l.Appended(Offset(100 + 10*i + 10))
		l.FollowerFetch(2, l.LEO(), now) // 2 keeps up
		l.FollowerFetch(3, 100, now)     // 3 is stuck
	}
	got := l.Lagging(now)
	if !reflect.DeepEqual(got, []BrokerID{3}) {
		t.Fatalf("Lagging = %v, want [3]", got)
	}
	// A follower that fetches at the LEO the leader had at its previous
	// fetch was caught up then, even if the leader appended since.
	l2 := newTestLeader()
	now = t0
	for i := 0; i < 30; i++ {
		prev := l2.LEO()
		now = now.Add(time.Second)
		l2.Appended(prev + 10)
		l2.FollowerFetch(2, prev, now)
		l2.FollowerFetch(3, prev, now)
	}
	if got := l2.Lagging(now); len(got) != 0 {
		t.Fatalf("Lagging = %v for followers one fetch behind", got)
	}
	// Silence counts: no fetch at all for longer than the lag time.
	if got := l2.Lagging(now.Add(12 * time.Second)); !reflect.DeepEqual(got, []BrokerID{2, 3}) {
		t.Fatalf("Lagging after silence = %v", got)
	}
}

// TestLeaderExpand: a follower rejoins when it reaches the HW and the epoch start.
func TestLeaderExpand(t *testing.T) {
	l := newTestLeader()
	l.SetISR([]BrokerID{1, 2})
	l.Appended(300)
	l.FollowerFetch(2, 300, t0)
	if l.HW() != 300 {
		t.Fatalf("HW %d", l.HW())
	}
	if l.FollowerFetch(3, 90, t0) {
		t.Fatal("expand below the epoch start and HW")
	}
	if l.FollowerFetch(3, 299, t0) {
		t.Fatal("expand below the HW")
	}
	if !l.FollowerFetch(3, 300, t0) {
		t.Fatal("no expand at the HW")
	}
	l.SetISR([]BrokerID{1, 2, 3})
	if l.FollowerFetch(3, 300, t0) {
		t.Fatal("expand of a member")
	}
	// The epoch start binds even when the HW is below it.
	l2 := NewLeaderState(LeaderConfig{ID: 1, Replicas: []BrokerID{1, 2}, ISR: []BrokerID{1},
		Epoch: 1, EpochStart: 100, LEO: 100, HW: 0, LagTime: time.Second, Now: t0})
	if l2.HW() != 100 {
		t.Fatalf("sole leader's HW = %d", l2.HW())
	}
	if l2.FollowerFetch(2, 50, t0) {
		t.Fatal("expand before the epoch start")
	}
}

// TestLeaderExpandHoldsHW: from the fetch that proposes an expansion until
// the ISR write is adopted or given up, the HW does not pass the joining
// follower's log end (rule 3; TLA+ LeaderExpandIsr is one step). Found by
// the fault suite's invariant monitor (split, safe, seed 1: strong-isr,
// "broker 1 is in the ISR [2 3 1] ... but its log ends at 11284021, below
// the leader's high watermark 11484003"): the HW moved on with the old ISR
// while the expansion was written to ZooKeeper. Before the fix the HW
// reached 500 here, above follower 3's 300.
func TestLeaderExpandHoldsHW(t *testing.T) {
	l := newTestLeader()
	l.SetISR([]BrokerID{1, 2})
	l.Appended(300)
	l.FollowerFetch(2, 300, t0)
	if !l.FollowerFetch(3, 300, t0) {
		t.Fatal("no expand at the HW")
	}
	// While the expansion is written, the leader and the old ISR move on.
	l.Appended(500)
	l.FollowerFetch(2, 500, t0)
	if got := l.HW(); got != 300 {
		t.Fatalf("HW %d while follower 3 (log end 300) is joining; want 300", got)
	}
	l.SetISR([]BrokerID{1, 2, 3})
	if got := l.HW(); got != 300 {
		t.Fatalf("HW %d after the expansion; want 300", got)
	}
	l.FollowerFetch(3, 500, t0)
	if got := l.HW(); got != 500 {
		t.Fatalf("HW %d once follower 3 caught up; want 500", got)
	}

	// An expansion given up (its write failed) no longer holds the HW.
	l2 := newTestLeader()
	l2.SetISR([]BrokerID{1, 2})
	l2.Appended(300)
	l2.FollowerFetch(2, 300, t0)
	l2.FollowerFetch(3, 300, t0)
	l2.Appended(500)
	l2.FollowerFetch(2, 500, t0)
	l2.EndJoins()
	if got := l2.HW(); got != 500 {
		t.Fatalf("HW %d after the expansion was given up; want 500", got)
	}
	l2.FollowerFetch(3, 500, t0)
	l2.EndJoin(3)
	l2.Appended(700)
	l2.FollowerFetch(2, 700, t0)
	if got := l2.HW(); got != 700 {
		t.Fatalf("HW %d after EndJoin; want 700", got)
	}
}

func TestLeaderWaitHW(t *testing.T) {
	l := newTestLeader()
	l.Appended(200)
	done := make(chan error, 1)
	go func() { done <- l.WaitHW(context.Background(), 200) }()
	l.FollowerFetch(2, 200, t0)
	select {
	case err := <-done:
		t.Fatalf("WaitHW returned %v before follower 3 caught up", err)
	default:
	}
	l.FollowerFetch(3, 200, t0)
	if err := <-done; err != nil {
		t.Fatalf("WaitHW = %v", err)
	}
	go func() { done <- l.WaitHW(context.Background(), 300) }()
	l.Fence()
	if err := <-done; !errors.Is(err, ErrFenced) {
		t.Fatalf("WaitHW after Fence = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l3 := newTestLeader()
	l3.Appended(500)
	if err := l3.WaitHW(ctx, 500); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitHW with a cancelled context = %v", err)
	}
}

// TestLeaderWaitHWWakesOnlyReached: an HW move wakes the acks=-1 waits it
// completes and leaves the others asleep and registered; a cancelled wait
// unregisters itself.
func TestLeaderWaitHWWakesOnlyReached(t *testing.T) {
	l := newTestLeader()
	l.Appended(300)
	near, far := make(chan error, 1), make(chan error, 1)
	go func() { near <- l.WaitHW(context.Background(), 100) }()
	go func() { far <- l.WaitHW(context.Background(), 300) }()
	waiting := func(n int) func() bool {
		return func() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.waiters) == n }
	}
	wait.Within(t, 10*time.Second, "two waiters registered", waiting(2))
	l.FollowerFetch(2, 150, t0)
	l.FollowerFetch(3, 150, t0)
	if err := <-near; err != nil {
		t.Fatalf("WaitHW(100) after HW 150 = %v", err)
	}
	if !waiting(1)() {
		t.Fatal("the wait for 300 was not left registered after HW 150")
	}
	select {
	case err := <-far:
		t.Fatalf("WaitHW(300) returned %v at HW 150", err)
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() { cancelled <- l.WaitHW(ctx, 1000) }()
	wait.Within(t, 10*time.Second, "the third waiter registered", waiting(2))
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled WaitHW = %v", err)
	}
	if !waiting(1)() {
		t.Fatal("a cancelled wait stayed registered")
	}
	l.FollowerFetch(2, 300, t0)
	l.FollowerFetch(3, 300, t0)
	if err := <-far; err != nil {
		t.Fatalf("WaitHW(300) at HW 300 = %v", err)
	}
}

// leaderAt answers OffsetForLeaderEpoch from a leader's epochs and LEO.
func leaderAt(entries []EpochEntry, leo Offset, asked *[]int32) AskLeader {
	return func(epoch int32) (int32, Offset, error) {
		*asked = append(*asked, epoch)
		for i := len(entries) - 1; i >= 0; i-- {
			if entries[i].Epoch <= epoch {
				if i == len(entries)-1 {
					return entries[i].Epoch, leo, nil
				}
				return entries[i].Epoch, entries[i+1].Start, nil
			}
		}
		return UndefinedEpoch, -1, nil
	}
}

func TestTruncationPoint(t *testing.T) {
	cases := []struct {
		name      string
		mode      Truncation
		local     []EpochEntry
		leo, hw   Offset
		leader    []EpochEntry
		leaderLEO Offset
		want      Offset
		wantAsked []int32
	}{
		// KIP-101 scenario 1: the follower holds m2 beyond its HW; the
		// leader holds it too. hw truncation drops it, epoch keeps it.
		{"kip101 hw", TruncateHW, []EpochEntry{{0, 0}}, 200, 100, []EpochEntry{{0, 0}, {1, 200}}, 200, 100, nil},
		{"kip101 epoch", TruncateEpoch, []EpochEntry{{0, 0}}, 200, 100, []EpochEntry{{0, 0}, {1, 200}}, 200, 200, []int32{0}},
		// Divergence: the follower wrote epoch 1 from 150 on as a leader
		// the new leader never heard of; the new leader's epoch 2 began at
		// 150. Cut at 150.
		{"divergent", TruncateEpoch, []EpochEntry{{0, 0}, {1, 150}}, 300, 100, []EpochEntry{{0, 0}, {2, 150}}, 400, 150, []int32{1}},
		// The follower is behind the leader in the same epoch: keep all.
		{"behind", TruncateEpoch, []EpochEntry{{0, 0}, {2, 150}}, 180, 100, []EpochEntry{{0, 0}, {2, 150}}, 400, 180, []int32{2}},
		// The leader knows none of the follower's epochs: ask older, then
		// fall back to the HW.
		{"unknown", TruncateEpoch, []EpochEntry{{0, 0}, {1, 10}}, 300, 90, []EpochEntry{{7, 0}}, 400, 90, []int32{1, 0}},
		{"no epochs", TruncateEpoch, nil, 300, 90, []EpochEntry{{0, 0}}, 400, 90, nil},
		// KIP-279 (rule 9): the leader answers with epoch 1, which the
		// follower never held: the leader's epoch 1 began at 100, inside
		// the follower's epoch 0, whose bytes there may differ. The
		// follower asks again about epoch 0 and cuts at 100, where epoch 0
		// ends in the leader's log. Before the fix it cut at 200 (the
		// start of its own epoch 2), keeping 100 bytes that may differ.
		{"kip279", TruncateEpoch, []EpochEntry{{0, 0}, {2, 200}}, 300, 50, []EpochEntry{{0, 0}, {1, 100}, {3, 250}}, 400, 100, []int32{2, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var asked []int32
			got, err := TruncationPoint(c.mode, c.local, c.leo, c.hw, leaderAt(c.leader, c.leaderLEO, &asked))
			if err != nil || got != c.want {
				t.Fatalf("TruncationPoint = %d, %v; want %d", got, err, c.want)
			}
			if !slices.Equal(asked, c.wantAsked) {
				t.Fatalf("asked %v, want %v", asked, c.wantAsked)
			}
		})
	}
	boom := errors.New("boom")
	if _, err := TruncationPoint(TruncateEpoch, []EpochEntry{{0, 0}}, 10, 0,
		func(int32) (int32, Offset, error) { return 0, 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("error not passed on: %v", err)
	}
}

func TestAssignReplicas(t *testing.T) {
	a, err := AssignReplicas([]BrokerID{2, 0, 1}, 6, 3)
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[BrokerID]int{}
	for p, rs := range a {
		if len(rs) != 3 || len(slices.Compact(slices.Sorted(slices.Values(rs)))) != 3 {
			t.Fatalf("partition %d: replicas %v not 3 distinct brokers", p, rs)
		}
		leaders[rs[0]]++
	}
	for id, n := range leaders {
		if n != 2 {
			t.Fatalf("broker %d leads %d of 6 partitions: %v", id, n, a)
		}
	}
	if want := []BrokerID{0, 1, 2}; !slices.Equal(a[0], want) {
		t.Fatalf("partition 0 = %v, want %v", a[0], want)
	}
	if _, err := AssignReplicas([]BrokerID{0, 1}, 1, 3); err == nil {
		t.Fatal("replication factor above the broker count accepted")
	}
}

func TestIsBoundary(t *testing.T) {
	cfg := log.DefaultConfig()
	cfg.Dir = t.TempDir()
	m, err := log.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreate("b", 0)
	if err != nil {
		t.Fatal(err)
	}
	set := wire.NewMessageSet([]byte("first message"), []byte("second"))
	if _, err := l.Append(set); err != nil { // unflushed: the written end counts
		t.Fatal(err)
	}
	second := Offset(len(wire.NewMessageSet([]byte("first message"))))
	for off, want := range map[Offset]bool{0: true, second: true, Offset(len(set)): true, 1: false, 4: false, second + 3: false} {
		if got := isBoundary(l, off); got != want {
			t.Errorf("isBoundary(%d) = %v, want %v", off, got, want)
		}
	}
}

func TestCompletePrefix(t *testing.T) {
	set := wire.NewMessageSet([]byte("abc"), []byte("defgh"))
	one := len(wire.NewMessageSet([]byte("abc")))
	for _, c := range []struct{ n, valid, need int }{
		{len(set), len(set), 0}, {len(set) - 1, one, len(set) - one}, {one + 2, one, wire.SizeLen}, {0, 0, 0}, {one, one, 0},
	} {
		if v, n := completePrefix(set[:c.n]); v != c.valid || n != c.need {
			t.Errorf("completePrefix(%d bytes) = %d, %d; want %d, %d", c.n, v, n, c.valid, c.need)
		}
	}
}
