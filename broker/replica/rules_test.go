package replica

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/replica/peer"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// The scenario tests of issue 21: one per replication rule of Kafka 0.8
// (and KIP-101/279/320 for epochs), each with real brokers and a real
// ZooKeeper and messages of varied sizes, so that an offset that is not a
// message boundary cannot pass for one. paper/replication.md lists them.

// variedSets returns n message sets of 1-4 messages each, of sizes from 1
// byte to 10 KiB drawn from seed; payloads start with tag and their number
// when they have room, so that a lost or reordered one is noticed.
func variedSets(seed uint64, tag string, n int) (sets [][]byte, payloads []string) {
	r := rand.New(rand.NewPCG(seed, 21))
	for i := 0; i < n; i++ {
		var ps [][]byte
		for j := 0; j < 1+r.IntN(4); j++ {
			size := 1 + r.IntN(10<<10)
			if r.IntN(4) == 0 {
				size = 1 + r.IntN(16)
			}
			p := make([]byte, size)
			for k := range p {
				p[k] = byte('a' + r.IntN(26))
			}
			copy(p, fmt.Sprintf("%s-%d-%d.", tag, i, j))
			ps = append(ps, p)
			payloads = append(payloads, string(p))
		}
		sets = append(sets, wire.NewMessageSet(ps...))
	}
	return sets, payloads
}

// produceAll sends sets to addr with acks and fails the test unless each is
// acknowledged.
func produceAll(t *testing.T, addr, topic string, p wire.Partition, acks int16, sets [][]byte, what string) {
	t.Helper()
	for i, set := range sets {
		if r := produce(t, addr, topic, p, acks, set); r.Code != wire.CodeNone {
			t.Fatalf("%s: set %d of %d: %v", what, i, len(sets), r.Code)
		}
	}
}

// loseLog empties every segment of a stopped broker's replica of topic-p:
// its machine lost what it had not flushed, here everything.
func loseLog(t testing.TB, dir, topic string, p wire.Partition) {
	t.Helper()
	segs := segmentsOf(t, dir, topic, p)
	if len(segs) == 0 {
		t.Fatalf("no segments of %s-%d in %s", topic, p, dir)
	}
	for _, s := range segs {
		if err := os.Truncate(s.path, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// holdAfterTruncation makes every fetcher of topic wait after truncating,
// before its first fetch, until release is closed or the fetcher stops.
func holdAfterTruncation(t *testing.T, topic string) (release func()) {
	ch := make(chan struct{})
	hook := func(tp string, _ Offset, stop <-chan struct{}) {
		if tp != topic {
			return
		}
		select {
		case <-ch:
		case <-stop:
		}
	}
	truncatedHook.Store(&hook)
	t.Cleanup(func() { truncatedHook.Store(nil) })
	var closed bool
	return func() {
		if !closed {
			closed = true
			close(ch)
		}
	}
}

// checkStrongISR asserts the TLA+ model's StrongIsr on the brokers' state:
// every ISR member in ZooKeeper that runs holds the leader's bytes below the
// leader's HW.
func (c *cluster) checkStrongISR(topic string, p wire.Partition) {
	t := c.t.(*testing.T)
	t.Helper()
	st, ok := c.state(topic, p)
	if !ok || st.Leader < 0 {
		return
	}
	ln := c.brokers[st.Leader]
	if ln == nil {
		return
	}
	lp, ok := ln.layerPartition(topic, p)
	if !ok || lp.leaderState() == nil {
		return
	}
	hw := lp.highWatermark()
	from := lp.log.StartOffset()
	want := logBytesFrom(t, ln.dir, topic, p, from, hw)
	for _, r := range st.ISR {
		nd := c.brokers[r]
		if nd == nil || r == st.Leader {
			continue
		}
		fp, ok := nd.layerPartition(topic, p)
		if !ok || fp.log.WrittenEnd() < hw {
			end := Offset(-1)
			if ok {
				end = fp.log.WrittenEnd()
			}
			c.t.Fatalf("StrongIsr: ISR member %d of %s-%d (ISR %v, epoch %d) ends at %d, below the HW %d",
				r, topic, p, st.ISR, st.LeaderEpoch, end, hw)
		}
		if got := logBytesFrom(t, nd.dir, topic, p, max(from, fp.log.StartOffset()), hw); !bytes.Equal(got, want[max(from, fp.log.StartOffset())-from:]) {
			c.t.Fatalf("StrongIsr: ISR member %d of %s-%d differs from leader %d below the HW %d", r, topic, p, st.Leader, hw)
		}
	}
}

// TestRule1DeadReplicaLeavesISR: the controller removes a dead broker's
// replicas from every ISR (0.8's OfflineReplica, TLA+ ControllerShrinkIsr),
// so a follower whose machine lost its unflushed log and came back within
// replica.lag.time.max.ms is not an electable ISR member; when every ISR
// member is dead the partition goes offline (leader -1) keeping its last
// members, and clean election waits for one of them.
//
// Before the fix it failed waiting for the controller to drop the dead
// follower (30 s: only the leader's lag timer, here a minute, removed it);
// the run of the same schedule by hand elected the returning
// follower with an empty log and lost all 20,000 acknowledged lines.
func TestRule1DeadReplicaLeavesISR(t *testing.T) {
	release := holdAfterTruncation(t, "d")
	defer release()
	c := startCluster(t, 3, func(id int, cfg *broker.Config, rc *Config) {
		rc.MinInsyncReplicas = 2
		rc.LagTime = time.Minute // the leader's lag timer never acts here
	})
	c.createTopic("d", zkcoord.Assignment{0: {0, 1, 2}})
	release() // the first followers fetch freely
	leader := c.waitLeader("d", 0, 3)
	f1, f2 := (leader+1)%3, (leader+2)%3
	setsA, acked := variedSets(1, "a", 20)
	produceAll(t, c.brokers[leader].b.Addr, "d", 0, wire.AcksAll, setsA, "before any fault")

	// f1's machine crashes and loses its log.
	f1dir := c.dirOf(f1)
	c.stop(f1)
	loseLog(t, f1dir, "d", 0)
	wait.Within(t, clusterTimeout, "the controller to drop the dead follower from the ISR", func() bool {
		st, ok := c.state("d", 0)
		return ok && st.Leader == leader && !slices.Contains(st.ISR, f1)
	})
	setsB, more := variedSets(2, "b", 20)
	produceAll(t, c.brokers[leader].b.Addr, "d", 0, wire.AcksAll, setsB, "acks=-1 with the leader and one live follower")
	acked = append(acked, more...)

	// f1 comes back well within the lag time, and is held before it copies
	// anything.
	release = holdAfterTruncation(t, "d")
	c.restart(f1, f1dir)
	wait.Within(t, clusterTimeout, "the returning follower to start following", func() bool {
		p, ok := c.brokers[f1].layerPartition("d", 0)
		if !ok {
			return false
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.leaderEpoch >= 0
	})
	if st, _ := c.state("d", 0); slices.Contains(st.ISR, f1) {
		t.Fatalf("the returning follower %d with an empty log is in the ISR %v", f1, st.ISR)
	}
	c.checkStrongISR("d", 0)

	// The leader and then the other follower crash: no ISR member is alive.
	// The controller elects f2 in between, so that the last ISR is f2
	// alone; had it seen both deaths at once, the last ISR would be both,
	// and the partition would rightly wait for the two of them (an offline
	// state vouches for nobody: TestRestartedLeaderWaitsForTheISRMemberThatDidNot).
	c.stop(leader)
	wait.Within(t, clusterTimeout, "the controller to elect the live ISR member", func() bool {
		st, ok := c.state("d", 0)
		return ok && st.Leader == f2
	})
	c.stop(f2)
	var st zkcoord.PartitionState
	wait.Within(t, clusterTimeout, "the controller to act on both deaths", func() bool {
		var ok bool
		st, ok = c.state("d", 0)
		return ok && st.Leader != leader && st.Leader != f2
	})
	if st.Leader == f1 {
		t.Fatalf("the follower that lost its log was elected (epoch %d, ISR %v): %d acknowledged messages lost",
			st.LeaderEpoch, st.ISR, len(acked))
	}
	if st.Leader != NoBroker || slices.Contains(st.ISR, f1) || len(st.ISR) == 0 {
		t.Fatalf("with every ISR member dead the state is %+v, want no leader and the last ISR kept", st)
	}

	// A member of the last ISR returns: it leads, with everything acknowledged.
	release()
	c.restart(f2, c.dirOf(f2))
	wait.Within(t, clusterTimeout, "the returning ISR member to lead", func() bool {
		st, ok := c.state("d", 0)
		return ok && st.Leader == f2
	})
	consumeAll(t, c.brokers[f2].b.Addr, "d", 0, acked)
	c.checkStrongISR("d", 0)
}

// waiting reports how many acks=-1 requests wait for the HW on a leader.
func (l *LeaderState) waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiters)
}

// TestRule8EpochBumpKeepsWaitingRequests: a new leader epoch that keeps the
// leader (here the controller's shrink of the ISR when a follower dies; a
// reassignment step and a preferred election that changes nothing do the
// same) does not fail an acks=-1 request already waiting for the HW: it is
// acknowledged once the HW reaches it, as 0.8's purgatory does. The
// producer would otherwise retry it and write it twice.
//
// Before the fix the waiting request was answered NotLeaderForPartition
// the moment the epoch changed, with its messages already in the log.
func TestRule8EpochBumpKeepsWaitingRequests(t *testing.T) {
	release := holdAfterTruncation(t, "e")
	defer release()
	c := startCluster(t, 3, func(id int, cfg *broker.Config, rc *Config) { rc.LagTime = time.Minute })
	c.createTopic("e", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("e", 0, 3)
	lp, _ := c.brokers[leader].layerPartition("e", 0)
	lead := lp.leaderState()
	sets, payloads := variedSets(8, "e", 1)
	res := make(chan wire.ProduceResult, 1)
	go func() {
		_, body := requestNoFail(c.brokers[leader].b.Addr, wire.AppendProduceAcksRequest(nil, &wire.ProduceAcksRequest{
			Acks: wire.AcksAll, TimeoutMs: int32(clusterTimeout / time.Millisecond),
			Parts: []wire.ProduceRequest{{Topic: "e", Partition: 0, Messages: sets[0]}}}))
		rs, err := wire.DecodeProduceAcksResponse(body)
		if err != nil || len(rs) != 1 {
			res <- wire.ProduceResult{Code: wire.CodeUnknown}
			return
		}
		res <- rs[0]
	}()
	wait.Within(t, clusterTimeout, "the acks=-1 request to wait for the held followers", func() bool { return lead.waiting() == 1 })
	before, _ := c.state("e", 0)
	c.stop((leader + 1) % 3)
	wait.Within(t, clusterTimeout, "a new epoch with the same leader", func() bool {
		st, ok := c.state("e", 0)
		return ok && st.Leader == leader && st.LeaderEpoch > before.LeaderEpoch && lp.leaderState() != nil && lp.leaderState().Epoch() == st.LeaderEpoch
	})
	select {
	case r := <-res:
		t.Fatalf("the waiting acks=-1 request was answered %v when the epoch changed, before the HW reached it", r.Code)
	default:
	}
	release()
	select {
	case r := <-res:
		if r.Code != wire.CodeNone {
			t.Fatalf("the waiting acks=-1 request: %v, want acknowledged", r.Code)
		}
	case <-time.After(clusterTimeout):
		t.Fatal("the waiting acks=-1 request was never answered")
	}
	consumeAll(t, c.brokers[leader].b.Addr, "e", 0, payloads)
}

// requestNoFail is request for goroutines other than the test's: an error
// gives an empty body.
func requestNoFail(addr string, frame []byte) (wire.ErrorCode, []byte) {
	cl := peer.New(addr, clusterTimeout+10*time.Second, nil)
	defer cl.Close()
	code, body, err := cl.RoundTrip(frame, clusterTimeout+10*time.Second)
	if err != nil {
		return wire.CodeUnknown, nil
	}
	return code, append([]byte(nil), body...)
}

// offsetsOf sends OFFSETS (time, at most 10) for topic-p to addr.
func offsetsOf(t *testing.T, addr, topic string, p wire.Partition, time int64) (wire.ErrorCode, []wire.Offset) {
	t.Helper()
	code, body := request(t, addr, wire.AppendRequest(nil, &wire.Request{Type: wire.RequestOffsets,
		Offsets: &wire.OffsetsRequest{Topic: topic, Partition: p, Time: time, MaxOffsets: 10}}))
	if code != wire.CodeNone {
		return code, nil
	}
	offs, err := wire.DecodeOffsetsResponse(body)
	if err != nil {
		t.Fatal(err)
	}
	return code, offs
}

// TestRule2OffsetsAnswerAtMostTheHW: OFFSETS on a replicated partition is
// answered only by its leader (followers say NotLeaderForPartition) and
// never above the high watermark (0.8's handleOffsetRequest for ordinary
// clients), so a consumer that starts at "latest" starts at a committed
// message boundary, not inside bytes a failover may discard.
//
// Before the fix the leader answered "latest" with its flushed end (here
// tens of KiB of acks=1 messages the held followers never copied, with the
// HW at 0) and every follower answered with its own end.
func TestRule2OffsetsAnswerAtMostTheHW(t *testing.T) {
	release := holdAfterTruncation(t, "o2")
	defer release()
	c := startCluster(t, 3, func(id int, cfg *broker.Config, rc *Config) { rc.LagTime = time.Minute })
	c.createTopic("o2", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("o2", 0, 3)
	addr := c.brokers[leader].b.Addr
	sets, _ := variedSets(2, "o", 10)
	produceAll(t, addr, "o2", 0, wire.AcksLeader, sets, "acks=1 while the followers are held")
	lp, _ := c.brokers[leader].layerPartition("o2", 0)
	wait.Within(t, clusterTimeout, "the leader to flush", func() bool { return lp.log.EndOffset() == lp.log.WrittenEnd() })
	hw := lp.highWatermark()
	if hw != 0 {
		t.Fatalf("HW %d with every follower held before its first fetch", hw)
	}
	code, offs := offsetsOf(t, addr, "o2", 0, wire.LatestTime)
	if code != wire.CodeNone || len(offs) == 0 || offs[0] != hw {
		t.Fatalf("leader's OFFSETS latest = %v %v, want [%d] (the HW; the flushed end is %d)", code, offs, hw, lp.log.EndOffset())
	}
	for _, o := range offs {
		if o > hw {
			t.Fatalf("leader's OFFSETS %v holds %d, above the HW %d", offs, o, hw)
		}
	}
	if code, offs := offsetsOf(t, addr, "o2", 0, wire.EarliestTime); code != wire.CodeNone || len(offs) != 1 || offs[0] != 0 {
		t.Fatalf("leader's OFFSETS earliest = %v %v, want [0]", code, offs)
	}
	for id, nd := range c.brokers {
		if id == leader {
			continue
		}
		if code, offs := offsetsOf(t, nd.b.Addr, "o2", 0, wire.LatestTime); code != wire.CodeNotLeaderForPartition {
			t.Fatalf("follower %d answered OFFSETS with %v %v, want NotLeaderForPartition", id, code, offs)
		}
	}
	// Once the followers copy, "latest" is the HW at the log end, a boundary.
	release()
	wait.Within(t, clusterTimeout, "the HW to reach the log end", func() bool { return lp.highWatermark() == lp.log.WrittenEnd() })
	if code, offs := offsetsOf(t, addr, "o2", 0, wire.LatestTime); code != wire.CodeNone || len(offs) == 0 || offs[0] != lp.log.WrittenEnd() {
		t.Fatalf("leader's OFFSETS latest = %v %v, want the log end %d", code, offs, lp.log.WrittenEnd())
	}
}

// TestRule4FollowerBelowLeaderStartStartsOver: a follower whose log ends
// below its leader's log start (retention deleted the segments it missed
// while down) starts over, empty, at the leader's log start (0.8's
// handleOffsetOutOfRange and truncateFullyAndStartAt), catches up and
// rejoins the ISR.
//
// Before the fix it never rejoined: its fetches were refused as
// OffsetOutOfRange, it "truncated again" to the same point every backoff,
// and the wait for an ISR of 3 timed out after 30 s.
func TestRule4FollowerBelowLeaderStartStartsOver(t *testing.T) {
	c := startCluster(t, 3, func(id int, cfg *broker.Config, rc *Config) {
		cfg.Log.FileSize = 16 << 10 // many segments
		cfg.Log.RetentionSize = 48 << 10
	})
	c.createTopic("s", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("s", 0, 3)
	addr := c.brokers[leader].b.Addr
	sets, acked := variedSets(4, "s", 10)
	produceAll(t, addr, "s", 0, wire.AcksAll, sets, "before the follower stops")
	f := (leader + 1) % 3
	fdir := c.dirOf(f)
	c.stop(f)
	c.waitLeader("s", 0, 2)
	more, payloads := variedSets(5, "t", 60)
	produceAll(t, addr, "s", 0, wire.AcksAll, more, "while the follower is down")
	acked = append(acked, payloads...)
	lp, _ := c.brokers[leader].layerPartition("s", 0)
	fend := logEnd(t, fdir, "s", 0)
	if n, err := lp.log.DeleteOldSegments(); err != nil || n == 0 {
		t.Fatalf("retention on the leader deleted %d segments: %v", n, err)
	}
	start := lp.log.StartOffset()
	if start <= fend {
		t.Fatalf("the leader's log starts at %d, not above the stopped follower's end %d: the schedule did not happen", start, fend)
	}
	c.restart(f, fdir)
	c.waitLeader("s", 0, 3)
	fp, _ := c.brokers[f].layerPartition("s", 0)
	if got := fp.log.StartOffset(); got != start {
		t.Fatalf("the follower's log starts at %d, want the leader's start %d", got, start)
	}
	hw := lp.highWatermark()
	wait.Within(t, clusterTimeout, "the follower to hold the leader's log", func() bool { return fp.log.WrittenEnd() >= hw })
	if got, want := logBytesFrom(t, fdir, "s", 0, start, hw), logBytesFrom(t, c.dirOf(leader), "s", 0, start, hw); !bytes.Equal(got, want) {
		t.Fatalf("the follower's bytes from %d to the HW %d differ from the leader's", start, hw)
	}
	c.checkStrongISR("s", 0)
	_ = acked
}

// segmentFile is one segment file of a replica and the offset it starts at.
type segmentFile struct {
	start Offset
	path  string
}

// segmentsOf lists a replica's segment files, oldest first.
func segmentsOf(t testing.TB, dir, topic string, p wire.Partition) []segmentFile {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, fmt.Sprintf("%s-%d", topic, p), "*"+wire.SegmentSuffix))
	if err != nil {
		t.Fatal(err)
	}
	var out []segmentFile
	for _, n := range names {
		start, ok := wire.ParseSegmentName(filepath.Base(n))
		if !ok {
			t.Fatalf("not a segment name: %s", n)
		}
		out = append(out, segmentFile{start, n})
	}
	slices.SortFunc(out, func(a, b segmentFile) int { return int(a.start - b.start) })
	return out
}

// logEnd returns the end offset of a stopped replica's log, from its
// segment files' names and sizes.
func logEnd(t *testing.T, dir, topic string, p wire.Partition) Offset {
	t.Helper()
	segs := segmentsOf(t, dir, topic, p)
	if len(segs) == 0 {
		t.Fatalf("no segments of %s-%d in %s", topic, p, dir)
	}
	last := segs[len(segs)-1]
	fi, err := os.Stat(last.path)
	if err != nil {
		t.Fatal(err)
	}
	return last.start + Offset(fi.Size())
}

// logBytesFrom reads a replica's log from its files between from and to.
func logBytesFrom(t *testing.T, dir, topic string, p wire.Partition, from, to Offset) []byte {
	t.Helper()
	if from >= to {
		return nil
	}
	var all []byte
	base := Offset(-1)
	for _, s := range segmentsOf(t, dir, topic, p) {
		b, err := os.ReadFile(s.path)
		if err != nil {
			t.Fatal(err)
		}
		if s.start+Offset(len(b)) <= from {
			continue
		}
		if base < 0 {
			base = s.start
		}
		all = append(all, b...)
	}
	if base < 0 || base > from || base+Offset(len(all)) < to {
		t.Fatalf("replica in %s holds [%d, %d), not [%d, %d)", dir, base, base+Offset(len(all)), from, to)
	}
	return all[from-base : to-base]
}

// TestRule6CutOffLeaderStopsAcknowledging: a leader cut off from ZooKeeper
// (the connection of its one session lost) stops
// acknowledging, acks=1 included, a third of the session timeout after it
// lost the connection: before the server expires its session, and so
// before the controller elects another leader whose log would discard what
// the zombie acknowledged. Once the cut heals, it learns its session
// expired and follows the new leader.
//
// Before the fix the cut-off leader acknowledged acks=1 writes for as long
// as it stayed cut off: it learns of a session expiry only when a
// reconnection is told so: 40,059 acks=1 sets in the test's 30 s, broker 1
// elected leader in epoch 1 meanwhile.
func TestRule6CutOffLeaderStopsAcknowledging(t *testing.T) {
	c := startCluster(t, 3, nil)
	c.createTopic("z", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("z", 0, 3)
	old, _ := c.state("z", 0)
	nd := c.brokers[leader]
	sets, _ := variedSets(6, "z", 200)
	cut := time.Now()
	nd.cutZK()
	var acked, i int
	var refused wire.ErrorCode
	for ; time.Since(cut) < clusterTimeout; i++ {
		r := produce(t, nd.b.Addr, "z", 0, wire.AcksLeader, sets[i%len(sets)])
		if r.Code != wire.CodeNone {
			refused = r.Code
			break
		}
		acked++
	}
	st, _ := c.state("z", 0)
	t.Logf("the cut-off leader acknowledged %d sets in %v, then answered %v; ZooKeeper: leader %d, epoch %d",
		acked, time.Since(cut).Round(time.Millisecond), refused, st.Leader, st.LeaderEpoch)
	if refused != wire.CodeNotLeaderForPartition {
		t.Fatalf("the cut-off leader answered %v, want NotLeaderForPartition", refused)
	}
	if st.LeaderEpoch != old.LeaderEpoch {
		t.Fatalf("the cut-off leader acknowledged acks=1 writes until epoch %d's leader %d was elected", st.LeaderEpoch, st.Leader)
	}
	var next zkcoord.PartitionState
	wait.Within(t, clusterTimeout, "another leader", func() bool {
		next, _ = c.state("z", 0)
		return next.Leader != leader && next.Leader >= 0 && next.LeaderEpoch > old.LeaderEpoch
	})
	if r := produce(t, nd.b.Addr, "z", 0, wire.AcksLeader, sets[0]); r.Code != wire.CodeNotLeaderForPartition {
		t.Fatalf("the deposed leader answered %v after broker %d's election, want NotLeaderForPartition", r.Code, next.Leader)
	}
	nd.healZK()
	c.waitLeader("z", 0, 3)
	c.checkStrongISR("z", 0)
}

// TestRule9LeaderRefusesOtherEpochs (KIP-320): OFFSET_FOR_LEADER_EPOCH and
// REPLICA_FETCH carry the epoch of the follower's order, and the leader
// refuses one of an older epoch (FencedLeaderEpoch) or a newer one
// (UnknownLeaderEpoch), so a follower of a deposed leader cannot truncate
// against its log. A leader that sees a newer epoch while ZooKeeper names
// another leader stops acknowledging at once (rule 6). The KIP-279 step
// (asking again while the answer's epoch is one the follower never held)
// is TestTruncationPoint's "kip279" case.
//
// Before the fix OFFSET_FOR_LEADER_EPOCH carried no current epoch: the
// leader answered a follower of any epoch, and a deposed leader still
// leading in its own eyes answered the new leader's followers.
func TestRule9LeaderRefusesOtherEpochs(t *testing.T) {
	c := startCluster(t, 3, nil)
	c.createTopic("k9", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("k9", 0, 3)
	sets, _ := variedSets(9, "k", 5)
	produceAll(t, c.brokers[leader].b.Addr, "k9", 0, wire.AcksAll, sets, "")
	// A new epoch that keeps the leader: a follower dies.
	c.stop((leader + 1) % 3)
	st := c.state9(leader)
	ask := func(current int32) wire.ErrorCode {
		code, body := request(t, c.brokers[leader].interAddr(), wire.AppendOffsetForLeaderEpochRequest(nil, &wire.OffsetForLeaderEpochRequest{
			Topic: "k9", Partition: 0, CurrentLeaderEpoch: current, LeaderEpoch: 0}))
		if code == wire.CodeNone {
			if _, _, err := wire.DecodeOffsetForLeaderEpochResponse(body); err != nil {
				t.Fatal(err)
			}
		}
		return code
	}
	for _, q := range []struct {
		current int32
		want    wire.ErrorCode
	}{{st.LeaderEpoch, wire.CodeNone}, {st.LeaderEpoch - 1, wire.CodeFencedLeaderEpoch}, {st.LeaderEpoch + 1, wire.CodeUnknownLeaderEpoch}} {
		if code := ask(q.current); code != q.want {
			t.Errorf("OFFSET_FOR_LEADER_EPOCH from a follower of epoch %d (the leader's is %d): %v, want %v", q.current, st.LeaderEpoch, code, q.want)
		}
	}
	// The leader still leads: ZooKeeper names it, so a newer epoch seen
	// in a request is an order on its way, not a deposition.
	if r := produce(t, c.brokers[leader].b.Addr, "k9", 0, wire.AcksLeader, sets[0]); r.Code != wire.CodeNone {
		t.Fatalf("the leader after a request of a newer epoch: %v", r.Code)
	}
}

// state9 waits for a leader epoch above 0 with leader still leading it.
func (c *cluster) state9(leader BrokerID) zkcoord.PartitionState {
	var st zkcoord.PartitionState
	wait.Within(c.t, clusterTimeout, "a new epoch with the same leader", func() bool {
		var ok bool
		st, ok = c.state("k9", 0)
		lp, _ := c.brokers[leader].layerPartition("k9", 0)
		return ok && st.Leader == leader && st.LeaderEpoch > 0 && lp.leaderState() != nil && lp.leaderState().Epoch() == st.LeaderEpoch
	})
	return st
}

// TestRule3NoAppendAfterDemotion: a produce that passed its leader check
// holds off the change of role until its append is done (0.8's
// leaderIsrUpdateLock), so it never appends to a replica that has become a
// follower and truncated. The produce here is held between its check and
// its append while a preferred replica election moves the leadership away,
// and the followers are held after they truncate; the new leader then takes
// a message of the held one's size, so that the held one, had it been
// appended at the follower's end after its truncation, would pass the
// leader's boundary check and sit below the HW where the leader holds
// another message.
//
// Before the fix the demotion and the truncation ran while the produce
// was held, the produce then appended at the follower's end, and the
// follower became an ISR member whose bytes below the HW differed from the
// leader's (StrongIsr).
func TestRule3NoAppendAfterDemotion(t *testing.T) {
	c := startCluster(t, 3, nil)
	c.createTopic("a3", zkcoord.Assignment{0: {0, 1, 2}})
	if l := c.waitLeader("a3", 0, 3); l != 0 {
		t.Fatalf("leader %d, want the preferred 0", l)
	}
	sets, _ := variedSets(3, "a", 10)
	produceAll(t, c.brokers[0].b.Addr, "a3", 0, wire.AcksAll, sets, "before")
	dir0 := c.dirOf(0)
	c.stop(0)
	old := c.waitLeader("a3", 0, 2)
	c.restart(0, dir0)
	c.waitLeader("a3", 0, 3)
	op, _ := c.brokers[old].layerPartition("a3", 0)

	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func(topic string) {
		if topic == "a3" {
			once.Do(func() { close(held); <-release })
		}
	}
	appendHook.Store(&hook)
	t.Cleanup(func() { appendHook.Store(nil) })
	// From the election on, every fetcher that truncates is held until
	// unhold closes.
	var truncMu sync.Mutex
	truncated := map[<-chan struct{}]bool{} // by the fetcher's stop channel
	unhold := make(chan struct{})
	var holding atomic.Bool
	thook := func(topic string, _ Offset, stop <-chan struct{}) {
		if topic != "a3" || !holding.Load() {
			return
		}
		truncMu.Lock()
		truncated[stop] = true
		truncMu.Unlock()
		select {
		case <-unhold:
		case <-stop:
		}
	}
	truncatedHook.Store(&thook)
	t.Cleanup(func() { truncatedHook.Store(nil) })
	oldTruncated := func() bool {
		op.mu.Lock()
		f := op.fetch
		op.mu.Unlock()
		truncMu.Lock()
		defer truncMu.Unlock()
		return f != nil && truncated[f.stop]
	}

	rogue := wire.NewMessageSet(bytes.Repeat([]byte("r"), 100))
	res := make(chan wire.ErrorCode, 1)
	go func() {
		_, body := requestNoFail(c.brokers[old].b.Addr, wire.AppendProduceAcksRequest(nil, &wire.ProduceAcksRequest{
			Acks: wire.AcksLeader, TimeoutMs: 5000, Parts: []wire.ProduceRequest{{Topic: "a3", Partition: 0, Messages: rogue}}}))
		rs, err := wire.DecodeProduceAcksResponse(body)
		if err != nil || len(rs) != 1 {
			res <- wire.CodeUnknown
			return
		}
		res <- rs[0].Code
	}()
	<-held
	holding.Store(true)
	if err := c.zk.CreatePersistent(zkcoord.PreferredReplicaElectionPath,
		zkcoord.MarshalElection([]wire.TopicPartition{{Topic: "a3", Partition: 0}})); err != nil {
		t.Fatal(err)
	}
	// The old leader's order arrives: it is demoted and truncates (the old
	// code), or its change of role waits for the held append (a writer
	// waits on the lock).
	wait.Within(t, clusterTimeout, "the order to reach the old leader", func() bool {
		if oldTruncated() {
			return true
		}
		if op.appending.TryLock() {
			op.appending.Unlock()
			return false
		}
		return true
	})
	close(release)
	t.Logf("the held produce: %v", <-res)
	appendHook.Store(nil)
	wait.Within(t, clusterTimeout, "the old leader to follow, truncated", oldTruncated)
	wait.Within(t, clusterTimeout, "the preferred replica to lead", func() bool {
		st, ok := c.state("a3", 0)
		lp, _ := c.brokers[0].layerPartition("a3", 0)
		return ok && st.Leader == 0 && lp.leaderState() != nil
	})
	next := wire.NewMessageSet(bytes.Repeat([]byte("n"), 100))
	if r := produce(t, c.brokers[0].b.Addr, "a3", 0, wire.AcksLeader, next); r.Code != wire.CodeNone {
		t.Fatalf("produce to the new leader: %v", r.Code)
	}
	close(unhold)
	lp, _ := c.brokers[0].layerPartition("a3", 0)
	wait.Within(t, clusterTimeout, "the HW to pass the new message", func() bool { return lp.highWatermark() == lp.log.WrittenEnd() })
	c.waitLeader("a3", 0, 3)
	c.checkStrongISR("a3", 0)
}
