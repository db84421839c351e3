package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/consumer/group"
	"github.com/netdb11/kafka/experiments/faults/check"
)

// Consumers of a replicated trial, each recorded poll by poll (check.Event
// Poll, in the order each consumer got its messages):
//
//   - the group consumer (consumer/group), group "faults": member group-1
//     for the whole run, group-2 for its first half, group-3 from a second
//     after that; each commits every commitEvery (recorded: check.TypeCommit)
//     and its rebalances are recorded (check.TypeRebalance). After the
//     faults are healed, group-1 and group-3 are drained: they poll until
//     they have read every partition to its end (check.TypeDrain), so that
//     an acknowledged message none of them read is unseen.
//   - the console consumer's path: a group consumer of its own group
//     starting at "latest" (autooffset.reset=largest), joining a quarter
//     into the run ("latest").
//   - a SimpleConsumer assigned to partition 0 ("simple-0"), following its
//     leader from offset 0.
const commitEvery = 500 * time.Millisecond

// polls records consumers' polls, commits and rebalances for the history.
type polls struct {
	mu   sync.Mutex
	evs  []check.Event
	n    map[string]int                // polls so far, by reader
	next map[string]map[check.TP]int64 // by reader: the offset after its last message of each partition
	// rebalances counts the group members' completed rebalances (a drain
	// that waits for a rejoining group sees them as progress).
	rebalances int
	// failed counts each reader's failed polls (a position the log no
	// longer has: InvalidMessage; the group consumer then leaves the
	// partition).
	failed map[string]int
	start  time.Time // the trial's start, for Mono
}

func (ps *polls) add(e check.Event) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.addLocked(e)
}

func (ps *polls) addLocked(e check.Event) {
	now := time.Now()
	e.Wall, e.Mono = now, now.Sub(ps.start).Nanoseconds()
	ps.evs = append(ps.evs, e)
}

// poll records one message reader got: its payload and the offset after it.
func (ps *polls) poll(reader string, tp check.TP, next int64, payload []byte) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.n[reader]++
	e := check.ReadEvent(reader, tp, next-int64(wire.Overhead+len(payload)), payload)
	e.Poll = ps.n[reader]
	ps.addLocked(e)
	if ps.next[reader] == nil {
		ps.next[reader] = map[check.TP]int64{}
	}
	ps.next[reader][tp] = next
}

// furthest is how far the readers together have read tp: the largest
// offset after a message of tp that one of them got.
func (ps *polls) furthest(readers []string, tp check.TP) int64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var n int64
	for _, r := range readers {
		n = max(n, ps.next[r][tp])
	}
	return n
}

// groupLog hears a group consumer's log for its rebalances. A rebalance
// is recorded where it starts (the fetchers stop, and a message returned
// but not yet marked consumed will come again), not only where it ends: the
// new assignment's first polls can come before "rebalanced" is logged, and
// a poll that repeats the message the consumer held when its rebalance
// began is the at-least-once the group consumer promises, not a
// nonmonotonic-poll (soak seed 343, 3 December: the "latest" member polled
// offset 80,691,075 again 19 ms before its "rebalanced").
type groupLog struct {
	ps     *polls
	reader string
}

func (g groupLog) Enabled(context.Context, slog.Level) bool { return true }
func (g groupLog) WithAttrs([]slog.Attr) slog.Handler       { return g }
func (g groupLog) WithGroup(string) slog.Handler            { return g }
func (g groupLog) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "rebalancing") {
		g.ps.add(check.Event{Type: check.TypeRebalance, Reader: g.reader, Target: "begun"})
	}
	if r.Message == "rebalanced" {
		owned := ""
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "owned" {
				owned = fmt.Sprint(a.Value.Any())
			}
			return true
		})
		g.ps.mu.Lock()
		g.ps.rebalances++
		g.ps.addLocked(check.Event{Type: check.TypeRebalance, Reader: g.reader, Target: owned})
		g.ps.mu.Unlock()
	}
	return nil
}

// consumers runs the trial's consumers until drain (which first waits for
// the drained members to reach the ends) or stop.
type consumers struct {
	w      *workload
	ps     *polls
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// drained are the group members that run to the end; members all of
// group "faults", whose polls alone say a message was seen (unseen).
var (
	drained = []string{"group-1", "group-3"}
	members = []string{"group-1", "group-2", "group-3"}
)

// startConsumers starts the consumers of a replicated trial whose workload
// runs for length.
func (w *workload) startConsumers(ctx context.Context, start time.Time, length time.Duration) *consumers {
	ctx, cancel := context.WithCancel(ctx)
	cs := &consumers{w: w, cancel: cancel, ps: &polls{n: map[string]int{}, next: map[string]map[check.TP]int64{}, failed: map[string]int{}, start: start}}
	member := func(name, groupID, reset string, from, until time.Duration) {
		cs.wg.Go(func() { cs.member(ctx, name, groupID, reset, start.Add(from), start.Add(until)) })
	}
	forever := 100 * time.Hour
	member("group-1", "faults", group.OffsetSmallest, 0, forever)
	member("group-2", "faults", group.OffsetSmallest, 0, length/2)
	member("group-3", "faults", group.OffsetSmallest, length/2+time.Second, forever)
	member("latest", "faults-latest", group.OffsetLargest, length/4, forever)
	cs.wg.Go(func() { cs.simple(ctx, w.parts[0]) })
	return cs
}

// stop ends the consumers and waits for them (a trial that ends early;
// after drain it does nothing).
func (cs *consumers) stop() {
	cs.cancel()
	cs.wg.Wait()
}

func (w *workload) zkDial(network, addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return w.cl.Dial(ctx, addr)
}

// member is one group consumer from from until until (or ctx's end).
func (cs *consumers) member(ctx context.Context, name, groupID, reset string, from, until time.Time) {
	w := cs.w
	if sleep(ctx, time.Until(from)) != nil {
		return
	}
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	cfg := group.DefaultConfig()
	cfg.GroupID, cfg.ConsumerID = groupID, name
	cfg.ZkConnect = w.cl.ZKConnect()
	cfg.ZkDial = w.zkDial
	cfg.ZkSessionTimeout = w.cl.cfg.SessionTimeout
	cfg.SocketTimeout = w.timeout
	cfg.FetcherBackoff = 100 * time.Millisecond
	cfg.RebalanceBackoff = time.Second
	cfg.RebalanceRetries = 10
	cfg.AutoCommit = true
	cfg.AutoCommitInterval = 10 * time.Second // the harness commits, and records it
	cfg.AutoOffsetReset = reset
	cfg.Logger = slog.New(groupLog{cs.ps, name})
	cfg.DialBroker = func(addr string) (group.Broker, error) {
		sc := consumer.DefaultConfig()
		sc.SocketTimeout, sc.Dial = w.timeout, w.libDial
		return consumer.NewSimpleConsumer(addr, sc)
	}
	var c *group.Consumer
	for c == nil {
		var err error
		if c, err = group.New(ctx, cfg, map[string]int{topic: 1}); err != nil {
			c = nil
			w.note("consumer %s: join: %v", name, err)
			if sleep(ctx, time.Second) != nil {
				return
			}
		}
	}
	defer func() {
		if err := c.Close(); err != nil {
			w.note("consumer %s: close: %v", name, err)
		}
		cs.ps.add(check.Event{Type: check.TypeRebalance, Reader: name, Target: "left"})
	}()
	commits := time.NewTicker(commitEvery)
	defer commits.Stop()
	var loop sync.WaitGroup
	defer loop.Wait()
	loop.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-commits.C:
			}
			cs.ps.mu.Lock()
			at := map[check.TP]int64{}
			for tp, o := range cs.ps.next[name] {
				at[tp] = o
			}
			cs.ps.mu.Unlock()
			err := c.Commit()
			for tp, o := range at {
				e := check.Event{Type: check.TypeCommit, Reader: name, Topic: tp.Topic, Partition: tp.Partition, Offset: o}
				if err != nil {
					e.Error = err.Error()
				}
				cs.ps.add(e)
			}
		}
	})
	// A partition that cannot be read (a position that is no message
	// boundary any more) fails Next with its error; the stream goes on
	// with the other partitions, as an application that logs and carries
	// on would.
	s := c.Streams(topic)[0]
	failed := 0
	defer func() {
		if failed > 0 {
			w.note("consumer %s: %d polls failed", name, failed)
		}
	}()
	for {
		m, err := s.Next(ctx)
		if err == nil {
			// Recorded even when the member's time is up: Close marks the
			// message Next returned consumed and commits it, so one left
			// unrecorded would be unseen (the soak's compound seed 183:
			// group-2's last message, at faults-2 offset 7,343,973).
			tp := check.TP{Topic: m.Topic, Partition: int32(m.Partition.Partition)}
			cs.ps.poll(name, tp, int64(m.NextOffset), m.Payload)
			continue
		}
		if ctx.Err() != nil || errors.Is(err, group.ErrClosed) {
			return
		}
		if failed++; failed == 1 {
			w.note("consumer %s: %v", name, err)
		}
		cs.ps.mu.Lock()
		cs.ps.failed[name]++
		cs.ps.mu.Unlock()
		if sleep(ctx, 10*time.Millisecond) != nil {
			return
		}
	}
}

// simple is a SimpleConsumer assigned to p: it reads p from offset 0,
// reconnecting to p's leader after every error, and, told its offset is out
// of range, starts again from the log's end (what the checker then sees is
// a poll that skipped or went back).
func (cs *consumers) simple(ctx context.Context, p partition) {
	w := cs.w
	name := fmt.Sprintf("simple-%d", p.part)
	var c *consumer.SimpleConsumer
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	var pos int64
	for ctx.Err() == nil {
		if c == nil {
			lctx, cancel := context.WithTimeout(ctx, w.timeout)
			b, err := w.cl.Leader(lctx, p.topic, p.part)
			cancel()
			if err == nil {
				sc := consumer.DefaultConfig()
				sc.SocketTimeout, sc.Dial = w.timeout, w.libDial
				c, err = consumer.NewSimpleConsumer(w.cl.BrokerAddr(b), sc)
			}
			if err != nil {
				c = nil
				sleep(ctx, 100*time.Millisecond)
				continue
			}
		}
		set, err := c.Fetch(ctx, p.topic, wire.Partition(p.part), wire.Offset(pos), 1<<20)
		if err == nil {
			it := set.Iterator()
			n := 0
			for it.Next() {
				next := int64(it.NextOffset())
				cs.ps.poll(name, p.tp, next, it.Payload())
				pos = next
				n++
			}
			err = it.Err()
			if err == nil && n == 0 {
				sleep(ctx, w.interval)
			}
		}
		if errors.Is(err, wire.ErrOffsetOutOfRange) {
			if offs, oerr := c.OffsetsBefore(ctx, p.topic, wire.Partition(p.part), -1, 1); oerr == nil && len(offs) == 1 {
				w.note("%s: offset %d out of range; from the end %d", name, pos, offs[0])
				pos = int64(offs[0])
				continue
			}
		}
		if err != nil {
			c.Close()
			c = nil
		}
	}
}

// drainStall is how long the drained group members may go without reading
// further into any partition short of its end before the drain gives up;
// drainFailing, how long when one of their polls failed (a position the
// log no longer has: the member leaves that partition, and will never get
// there). A healthy
// group rejoins and fetches within a few seconds of the cluster's
// recovery; waiting the whole timeout for a group that cannot move cost
// kip101 and isolate-kill under unclean 30 s each in the quick run (issue
// 23: make faults under 6 minutes).
const (
	drainStall   = 10 * time.Second
	drainFailing = 5 * time.Second
)

// drain waits, up to timeout, until the drained group members have read
// every partition to ends, or until for drainStall (drainFailing once one
// of their polls failed) they have read no further in any partition short of
// its end and none has completed a rebalance; then it stops every
// consumer and returns their events and a drain event (with Error when
// they did not get there).
func (cs *consumers) drain(ctx context.Context, ends map[check.TP]int64, timeout time.Duration) []check.Event {
	began := time.Now()
	deadline := began.Add(timeout)
	var short []string
	reached := int64(-1) // how far the group has read, summed over the short partitions, plus its rebalances
	moved := began
	stalled := false
	for {
		short = short[:0]
		cs.ps.mu.Lock()
		at := int64(cs.ps.rebalances)
		cs.ps.mu.Unlock()
		for tp, end := range ends {
			if n := cs.ps.furthest(drained, tp); n < end {
				short = append(short, fmt.Sprintf("%s (end %d, read to %d)", tp, end, n))
				at += n
			}
		}
		now := time.Now()
		cs.ps.mu.Lock()
		failing := false
		for _, r := range drained {
			failing = failing || cs.ps.failed[r] > 0
		}
		cs.ps.mu.Unlock()
		switch still := now.Sub(moved); {
		case at != reached:
			reached, moved = at, now
		case still >= drainStall, failing && still >= drainFailing:
			stalled = true
		}
		if len(short) == 0 || stalled || time.Now().After(deadline) || sleep(ctx, 100*time.Millisecond) != nil {
			break
		}
	}
	cs.cancel()
	cs.wg.Wait()
	e := check.Event{Type: check.TypeDrain, Reader: "group", Target: strings.Join(members, ",")}
	switch {
	case len(short) > 0 && stalled:
		slices.Sort(short)
		e.Error = fmt.Sprintf("the group did not read to the end of %v: no further for %v (after %v)", short, time.Since(moved).Round(100*time.Millisecond), time.Since(began).Round(100*time.Millisecond))
	case len(short) > 0:
		slices.Sort(short)
		e.Error = fmt.Sprintf("the group did not read to the end of %v within %v", short, timeout)
	}
	cs.ps.mu.Lock()
	defer cs.ps.mu.Unlock()
	cs.ps.addLocked(e)
	return slices.Clone(cs.ps.evs)
}

// drain reads each partition's end from its leader and drains the
// consumers to it (consumers.drain); nil when there are none.
func (t *trial) drain(ctx context.Context, cs *consumers) []check.Event {
	if cs == nil {
		return nil
	}
	ends := map[check.TP]int64{}
	for _, p := range t.w.parts {
		c, err := t.w.connect(ctx, p)
		if err == nil {
			var end int64
			end, err = c.latest(p.topic, p.part)
			c.Close()
			ends[p.tp] = end
		}
		if err != nil {
			t.note("drain: the end of %s: %v", p.tp, err)
		}
	}
	evs := cs.drain(ctx, ends, 30*time.Second)
	if e := evs[len(evs)-1]; e.Error != "" {
		t.note("drain: %s", e.Error)
	}
	return evs
}
