package replica

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// Errors of the leader side.
var (
	// ErrFenced means this replica lost the leadership: a conditional write
	// of the ISR failed (a newer controller or leader wrote the state), or
	// the controller made another replica leader. It acknowledges nothing
	// more.
	ErrFenced = errors.New("replica: not the leader any more (fenced)")
)

// LeaderState is the leader's view of one partition (0.8's Partition on its
// leader, with KIP-16's time-only lag rule): each follower's log end offset
// (LEO) as its fetches report it, the in-sync replica set (ISR) and the high
// watermark (HW), the offset below which every ISR member holds the log.
//
// It is pure logic: it does no I/O and reads no clock; callers pass the
// time. It proposes ISR changes (Lagging, FollowerFetch) that the caller
// writes to ZooKeeper with a conditional write and then confirms with
// SetISR, or, if the write fails, reports with Fence.
//
// Safe for concurrent use.
type LeaderState struct {
	id      BrokerID
	lagTime time.Duration

	mu         sync.Mutex
	replicas   []BrokerID             // guarded by mu
	epoch      int32                  // guarded by mu; grows with Continue
	epochStart Offset                 // guarded by mu
	isr        []BrokerID             // guarded by mu; the leader is a member
	leo        Offset                 // the leader's own LEO; guarded by mu
	hw         Offset                 // guarded by mu; never decreases
	followers  map[BrokerID]*follower // guarded by mu
	// joining are the followers an ISR expansion is being written for
	// (FollowerFetch said so): the HW counts them as members until the
	// write is adopted (SetISR) or given up (EndJoins), so that it never
	// passes their log end meanwhile. Guarded by mu.
	joining map[BrokerID]bool
	fenced  bool       // guarded by mu
	waiters []hwWaiter // WaitHW calls, unordered; guarded by mu
}

// hwWaiter is one WaitHW call: ch is closed when the HW reaches offset or
// the leader is fenced, so an HW move wakes only the acks=-1 requests it
// completes.
type hwWaiter struct {
	offset Offset
	ch     chan struct{}
}

// follower is what the leader knows of one follower.
type follower struct {
	leo            Offset    // -1 until its first fetch
	lastCaughtUp   time.Time // last time its LEO reached the leader's LEO
	lastFetch      time.Time
	leoAtLastFetch Offset // the leader's LEO at lastFetch
	sent           Offset // where the bytes last sent to it end, if a message boundary; -1: none
}

// newFollower is what a leader knows of a follower when it takes the
// leadership (or the follower joins the replicas) at now, with its own log
// ending at leo: nothing of its position, and caught up as of now.
func newFollower(now time.Time, leo Offset) *follower {
	return &follower{leo: -1, lastCaughtUp: now, lastFetch: now, leoAtLastFetch: leo, sent: -1}
}

// LeaderConfig describes a partition whose leadership this replica takes.
type LeaderConfig struct {
	// ID is this broker.
	ID BrokerID
	// Replicas is the assignment, ISR the current in-sync set (it must
	// hold ID).
	Replicas, ISR []BrokerID
	// Epoch is the leader epoch; EpochStart the log end offset when this
	// replica became its leader (the epoch's first offset).
	Epoch      int32
	EpochStart Offset
	// LEO and HW are the replica's log end and high watermark when it
	// became leader.
	LEO, HW Offset
	// LagTime is replica.lag.time.max.ms: a follower that has not caught up
	// for this long leaves the ISR.
	LagTime time.Duration
	// Now is the time of the takeover: followers count as caught up then.
	Now time.Time
}

// NewLeaderState starts the leader's view of a partition.
func NewLeaderState(c LeaderConfig) *LeaderState {
	l := &LeaderState{
		id: c.ID, replicas: slices.Clone(c.Replicas), epoch: c.Epoch, epochStart: c.EpochStart,
		lagTime: c.LagTime, isr: slices.Clone(c.ISR), leo: c.LEO, hw: min(c.HW, c.LEO),
		followers: make(map[BrokerID]*follower),
	}
	for _, r := range c.Replicas {
		if r != c.ID {
			l.followers[r] = newFollower(c.Now, c.LEO)
		}
	}
	l.updateHWLocked()
	return l
}

// Epoch returns the leader epoch.
func (l *LeaderState) Epoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch
}

// EpochStart returns the first offset of the leader's epoch.
func (l *LeaderState) EpochStart() Offset {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochStart
}

// Continue carries the leadership into a newer leader epoch that keeps this
// replica leader (the controller shrank the ISR, a reassignment changed the
// replicas): the HW, the followers' positions and the acks=-1 requests
// waiting for the HW go on, as in 0.8, whose DelayedProduce asks only
// whether the replica still leads and the HW has reached the request's
// offset (rule 8). New replicas start as followers with no position;
// dropped ones are forgotten.
func (l *LeaderState) Continue(c LeaderConfig) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.epoch, l.epochStart, l.replicas, l.isr = c.Epoch, c.EpochStart, slices.Clone(c.Replicas), slices.Clone(c.ISR)
	for id := range l.followers {
		if !slices.Contains(c.Replicas, id) {
			delete(l.followers, id)
		}
	}
	for _, r := range c.Replicas {
		if _, ok := l.followers[r]; !ok && r != l.id {
			l.followers[r] = newFollower(c.Now, l.leo)
		}
	}
	if c.LEO > l.leo {
		l.leo = c.LEO
	}
	l.updateHWLocked()
}

// HW returns the high watermark.
func (l *LeaderState) HW() Offset {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hw
}

// LEO returns the leader's log end offset as last reported by Appended.
func (l *LeaderState) LEO() Offset {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leo
}

// ISR returns a copy of the in-sync replica set.
func (l *LeaderState) ISR() []BrokerID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.isr)
}

// Fenced reports whether the leader has been fenced.
func (l *LeaderState) Fenced() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fenced
}

// FollowerLEO returns what the leader knows of a follower's LEO (-1: nothing).
func (l *LeaderState) FollowerLEO(id BrokerID) Offset {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.followers[id]; f != nil {
		return f.leo
	}
	return -1
}

// Appended reports the leader's new log end offset after an append.
func (l *LeaderState) Appended(leo Offset) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if leo > l.leo {
		l.leo = leo
	}
	l.updateHWLocked()
}

// FollowerFetch records a follower's fetch at offset (its LEO) at now. It
// returns true when the follower is outside the ISR and has caught up
// enough to join it: its LEO has reached the HW and the start of the
// current epoch. The caller then writes the larger ISR and calls SetISR.
//
// A follower is caught up at now if it fetched at the leader's LEO; if it
// fetched at or beyond the LEO the leader had at its previous fetch, it was
// caught up at that previous fetch (KIP-16: lag is measured in time only).
func (l *LeaderState) FollowerFetch(id BrokerID, offset Offset, now time.Time) (expand bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.followers[id]
	if f == nil {
		return false
	}
	switch {
	case offset >= l.leo:
		f.lastCaughtUp = now
	case offset >= f.leoAtLastFetch && f.lastFetch.After(f.lastCaughtUp):
		f.lastCaughtUp = f.lastFetch
	}
	f.lastFetch, f.leoAtLastFetch = now, l.leo
	f.leo = offset
	l.updateHWLocked()
	expand = !l.fenced && !slices.Contains(l.isr, id) && offset >= l.hw && offset >= l.epochStart
	if expand {
		// From now until the expansion is adopted or given up, the HW
		// waits for this follower too (0.8 decides and writes the
		// expansion under leaderIsrUpdateLock; TLA+ LeaderExpandIsr is
		// one step): an HW that moved past its log end while the write
		// was under way would make an ISR member lack committed bytes.
		if l.joining == nil {
			l.joining = make(map[BrokerID]bool)
		}
		l.joining[id] = true
	}
	return expand
}

// Boundary reports whether offset is a position of the leader's log that
// this leadership knows to start a message (or to end the log), so that a
// replica fetch there needs no check of the bytes: the leader's LEO as last
// reported by Appended, the HW and the epoch's start, and follower id's own
// last fetch offset and the end of the bytes last sent to it (Sent). The
// leader never truncates while it leads, so these stay boundaries.
func (l *LeaderState) Boundary(id BrokerID, offset Offset) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset == l.leo || offset == l.hw || offset == l.epochStart {
		return true
	}
	f := l.followers[id]
	return f != nil && (offset == f.sent || offset == f.leo)
}

// Sent records that a fetch of follower id was answered with bytes ending
// at end, a message boundary of the leader's log.
func (l *LeaderState) Sent(id BrokerID, end Offset) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.followers[id]; f != nil {
		f.sent = end
	}
}

// Lagging returns the ISR members that have not caught up for longer than
// replica.lag.time.max.ms at now: the caller shrinks the ISR without them.
func (l *LeaderState) Lagging(now time.Time) []BrokerID {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []BrokerID
	for _, r := range l.isr {
		if f := l.followers[r]; f != nil && now.Sub(f.lastCaughtUp) > l.lagTime {
			out = append(out, r)
		}
	}
	return out
}

// SetISR adopts an ISR the caller has written to ZooKeeper; the followers
// it holds are no longer joining.
func (l *LeaderState) SetISR(isr []BrokerID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.isr = slices.Clone(isr)
	for _, r := range isr {
		delete(l.joining, r)
	}
	l.updateHWLocked()
}

// EndJoin gives up the expansion FollowerFetch proposed for follower id
// (the caller will not write it).
func (l *LeaderState) EndJoin(id BrokerID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.joining[id] {
		delete(l.joining, id)
		l.updateHWLocked()
	}
}

// EndJoins gives up the expansions FollowerFetch proposed that no ISR write
// adopted (the write failed, or was not made): the HW no longer waits for
// those followers.
func (l *LeaderState) EndJoins() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.joining) > 0 {
		clear(l.joining)
		l.updateHWLocked()
	}
}

// Fence marks the leader as deposed: WaitHW fails from now on.
func (l *LeaderState) Fence() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.fenced {
		l.fenced = true
		l.notifyLocked()
	}
}

// WaitHW blocks until the HW reaches offset (every ISR member holds the log
// up to it), the leader is fenced (ErrFenced) or ctx ends. It is the wait of
// a produce request with acks=-1. A move of the HW wakes only the calls it
// completes (0.8's DelayedProduce purgatory keyed by the required offset).
func (l *LeaderState) WaitHW(ctx context.Context, offset Offset) error {
	l.mu.Lock()
	switch {
	case l.fenced:
		l.mu.Unlock()
		return ErrFenced
	case l.hw >= offset:
		l.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	l.waiters = append(l.waiters, hwWaiter{offset, ch})
	l.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waiters = slices.DeleteFunc(l.waiters, func(w hwWaiter) bool { return w.ch == ch })
	switch {
	case l.fenced:
		return ErrFenced
	case l.hw >= offset:
		return nil
	}
	return ctx.Err()
}

// updateHWLocked moves the HW to the smallest LEO over the ISR, never back.
func (l *LeaderState) updateHWLocked() {
	hw := l.leo
	for _, r := range l.isr {
		if f := l.followers[r]; f != nil {
			hw = min(hw, f.leo)
		}
	}
	for r := range l.joining {
		if f := l.followers[r]; f != nil {
			hw = min(hw, f.leo)
		}
	}
	if hw > l.hw {
		l.hw = hw
		l.notifyLocked()
	}
}

// notifyLocked wakes the waiters the HW has reached, or all once fenced;
// each removes itself.
func (l *LeaderState) notifyLocked() {
	kept := l.waiters[:0]
	for _, w := range l.waiters {
		if l.fenced || w.offset <= l.hw {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	clear(l.waiters[len(kept):])
	l.waiters = kept
}
