package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"time"
)

// Nemesis kinds.
const (
	// Kill SIGKILLs a broker and restarts it when healed.
	Kill = "kill"
	// Stop shuts a broker down cleanly (SIGTERM) and restarts it when healed.
	Stop = "stop"
	// Bounce restarts a broker twice in the window, hard (SIGKILL), waiting
	// the ZooKeeper session timeout while it is down.
	Bounce = "bounce"
	// Pause SIGSTOPs a broker past its ZooKeeper session (a zombie), then
	// SIGCONTs it.
	Pause = "pause"
	// IsolateBrokers cuts a broker off the other brokers but not from
	// ZooKeeper or the clients (Jepsen 2013's Kafka partition).
	IsolateBrokers = "isolate-brokers"
	// Isolate cuts a broker off everything: brokers, ZooKeeper, clients.
	Isolate = "isolate"
	// Split cuts the brokers into a minority (with the target) and a
	// majority that keeps ZooKeeper; clients reach both sides.
	Split = "split"
	// ZKStop kills ZooKeeper (every server of the ensemble) and restarts it
	// (same data) when healed.
	ZKStop = "zk-stop"
	// LoseTail kills a broker, cuts its partitions' logs back to their last
	// flush point (the disk loses what was not fsynced), and restarts it.
	LoseTail = "lose-tail"
	// IsolateKill is Jepsen 2013's schedule: the leader is cut off from
	// the other brokers (not from ZooKeeper), so its ISR shrinks to itself
	// while it goes on acknowledging; halfway through the window it is
	// killed, and a new leader must be elected from what is left. Healed:
	// network back, broker restarted.
	IsolateKill = "isolate-kill"
	// SlowKill slows the links into the other brokers (tbf at 600 kbit/s
	// on the switch ports: less than the followers need to keep up), so
	// they trail the leader, and SIGKILLs the leader before
	// replica.lag.time.max.ms has passed, while they are still in the ISR:
	// a follower elected then lacks what only the leader had (acks=1's loss).
	SlowKill = "slow-kill"
	// StallKill is SlowKill made deterministic: the followers' connections
	// to the leader's port are dropped both ways (iptables in their hosts;
	// the controller can still reach them), so nothing the leader appends
	// from then on reaches them, while they stay in its ISR until
	// replica.lag.time.max.ms has passed; once the producer of partition 0
	// holds acknowledgements of messages sent after the cut (acks=1: the
	// leader alone; at most three quarters of the lag time is waited for them), the
	// leader is SIGKILLed, and a follower that lacks all of them is
	// elected cleanly. Healed: rules removed, leader restarted.
	StallKill = "stall-kill"
	// KillLeader SIGKILLs the leader of partition 0 and restarts it when
	// healed: the availability experiment's fault (the time from the
	// leader's death to the first write acknowledged by its successor) and
	// acks=1's plain leader kill.
	KillLeader = "kill-leader"
	// StopLeader shuts the leader of partition 0 down cleanly (SIGTERM)
	// and restarts it when healed: the availability experiment's contrast,
	// a leader that closes its ZooKeeper session instead of letting it
	// time out.
	StopLeader = "stop-leader"
	// KIP101 is KIP-101's first scenario (Kafka's "leader epoch" KIP),
	// through the nemesis: follower F of partition 0 keeps running, but all
	// traffic of its connections to the leader's ports is dropped (iptables
	// in F's host; the controller still reaches F). F's high watermark
	// trails its log by the last fetch's bytes, which the leader
	// acknowledged once F's next fetch told it F held them. Then the other
	// follower G is SIGKILLed: the controller drops G from the ISR in a new
	// leader epoch that keeps the leader (issue 21 rule 1), and F, told of
	// the new epoch, truncates for it (replica.truncation=hw: to its high
	// watermark, dropping acknowledged messages; epoch: it must ask the
	// leader, which it cannot reach, so it keeps its log) but cannot fetch
	// again; then the leader is SIGKILLed while F is still in the ISR
	// (replica.lag.time.max.ms is longer than all this), and F, the only
	// live ISR member, is elected. Healed: F's rules removed, the leader
	// and G restarted.
	//
	// (Before issue 21's rule 1 the schedule restarted F with a trailing
	// high-watermark checkpoint; a restarted broker now leaves the ISR, so
	// the truncation comes from the epoch change, as any leader change
	// makes a follower truncate in KIP-101's text.)
	KIP101 = "kip101"
	// LoseTailFollower is LoseTail on a follower of partition 0.
	LoseTailFollower = "lose-tail-follower"
	// LoseTailAll is a power loss everywhere: every broker SIGKILLed at
	// once and every log cut back to its flushed end, then restarted. The
	// replicated configurations promise only what every replica had
	// flushed; the checker counts what is lost above that apart
	// (check.Anomaly.Unpromised).
	LoseTailAll = "lose-tail-all"
	// LoseTailRejoin is issue 21's rule 1 as a schedule: a follower of
	// partition 0 loses its unflushed tail and comes back within
	// replica.lag.time.max.ms (cut off from the leader's port, so it
	// cannot fetch back what it lost), then the leader and the other
	// follower crash, so that only it is left to be elected. See
	// (*trial).loseTailRejoin.
	LoseTailRejoin = "lose-tail-rejoin"
	// Compound is Jepsen's combined nemesis: from the seed, 2-4 faults
	// drawn from the single nemeses that apply to the configuration, in
	// sequence or overlapping (ScheduleCompound).
	Compound = "compound"
	// None injects nothing: the control.
	None = "none"
)

// Roles a fault's target may be given in a replicated cluster, resolved when
// the fault strikes (for partition 0 of the topic).
const (
	RoleLeader     = "leader"
	RoleFollower   = "follower"
	RoleController = "controller"
)

// Nemeses lists every kind, in report order.
var Nemeses = []string{None, Kill, Stop, Bounce, Pause, IsolateBrokers, Isolate, Split, ZKStop, LoseTail, IsolateKill, SlowKill, StallKill, KillLeader, StopLeader, KIP101,
	LoseTailFollower, LoseTailAll, LoseTailRejoin,
	DiskFullLeader, DiskFullFollower, RetentionJump, RetentionSize, Admin, Oneway, ZKCutController, ZKCutBroker,
	ZKKillMinority, ZKKillMajority, ZKPartitionMinority, ZKPartitionMajority,
	Compound}

// Fault is one scheduled nemesis: what, on which broker (0: none), when
// (from the trial's start) and for how long. In a replicated cluster Role,
// when set, picks the broker when the fault strikes.
type Fault struct {
	Kind   string
	Broker int
	Role   string `json:",omitempty"`
	At     time.Duration
	For    time.Duration
}

func (f Fault) String() string {
	s := f.Name()
	if f.Role != "" {
		s += " (" + f.Role + ")"
	}
	return s + fmt.Sprintf(" at %v for %v", f.At.Round(time.Millisecond), f.For.Round(time.Millisecond))
}

// Name is the fault's kind and its broker, or its kind alone when it
// strikes no one broker (ZooKeeper, the admin loop, every broker at once).
func (f Fault) Name() string {
	if f.Broker == 0 {
		return f.Kind
	}
	return fmt.Sprintf("%s broker%d", f.Kind, f.Broker)
}

// Schedule draws a trial's faults from its seed: count faults of kind, one
// after the other, each on a random broker, starting after a random pause
// and lasting a random time in [minFor, 2*minFor), all inside [warm,
// length-warm). The same seed gives the same schedule.
func Schedule(seed int64, kind string, brokers, count int, length, minFor time.Duration) []Fault {
	if kind == None {
		return nil
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x6661756c7473))
	warm := length / 6
	slot := (length - 2*warm) / time.Duration(count)
	var fs []Fault
	for i := range count {
		d := minFor + time.Duration(r.Int64N(int64(minFor)))
		d = min(d, slot*3/4)
		gap := slot - d
		at := warm + time.Duration(i)*slot + time.Duration(r.Int64N(int64(gap)+1))
		b, role := target(kind, 1+r.IntN(brokers), []string{RoleLeader, RoleFollower, RoleController}[r.IntN(3)])
		fs = append(fs, Fault{Kind: kind, Broker: b, Role: role, At: at, For: d})
	}
	return fs
}

// target is the broker and role a fault of kind strikes, given the ones
// drawn: some kinds have a role of their own.
func target(kind string, b int, role string) (int, string) {
	switch kind {
	case ZKStop, LoseTailAll, RetentionJump, RetentionSize, Admin, ZKKillMinority, ZKKillMajority, ZKPartitionMinority, ZKPartitionMajority:
		// Every broker (ZooKeeper's nemeses), or the retention nemeses' own topic's.
		return 0, ""
	case IsolateBrokers, IsolateKill, LoseTail, SlowKill, StallKill, KillLeader, StopLeader, KIP101, LoseTailRejoin, DiskFullLeader:
		// Jepsen's partition is of the leader; a lost tail matters where
		// acknowledged data lives.
		return b, RoleLeader
	case LoseTailFollower, DiskFullFollower:
		return b, RoleFollower
	case ZKCutController:
		return b, RoleController
	case ZKCutBroker:
		return b, RoleLeader
	}
	return b, role
}

// stretch is how long a fault of kind lasts: FaultFor, or longer where
// the kind needs it.
func (c *TrialConfig) stretch(kind string) time.Duration {
	d := c.FaultFor
	switch kind {
	case Pause:
		if d <= c.SessionTimeout {
			d = c.SessionTimeout + time.Second
		}
	case IsolateKill:
		// Isolated past the lag time, then dead past the session.
		d = max(d, c.LagTime+c.SessionTimeout+3*time.Second)
	case SlowKill, StallKill:
		// Slowed, then dead past the session, so that the controller elects.
		d = max(d, c.LagTime+c.SessionTimeout+3*time.Second)
	case Bounce:
		// Two restarts, each down for the session timeout.
		d = max(d, 2*c.SessionTimeout+2*time.Second)
	case KIP101, LoseTailRejoin:
		d = max(d, 2*c.SessionTimeout+8*time.Second)
	case RetentionJump, RetentionSize:
		// Down until the leader's retention, once a minute, has run.
		d = max(d, retentionLength/2)
	case Admin:
		d = max(d, adminFor)
	}
	return d
}

// errNoTarget marks a fault that found nothing to strike: every broker it
// would strike is down already, the partition has no leader or no live
// follower, no broker can say (ZooKeeper stopped, the brokers cut off). A
// compound schedule's faults meet such states by design; the trial stays
// valid and the fault's window says why it did not strike. Any other error
// while a fault is applied is the harness failing to act (iptables or tc
// refused, a tmpfs not mounted, a broker that would not start), and makes
// the trial invalid: a fault that was meant to strike and did not proves
// nothing.
var errNoTarget = errors.New("faults: nothing to strike")

// noTargetError is an error that left a fault nothing to strike; it reads
// as the error it wraps.
type noTargetError struct{ err error }

func (e noTargetError) Error() string   { return e.err.Error() }
func (e noTargetError) Unwrap() []error { return []error{e.err, errNoTarget} }

// noTarget marks err (nil stays nil) as the cluster's state leaving a fault
// nothing to strike.
func noTarget(err error) error {
	if err == nil {
		return nil
	}
	return noTargetError{err}
}

// apply injects f and returns the function that heals it.
func (t *trial) apply(ctx context.Context, f Fault) (heal func(context.Context) error, err error) {
	cl := t.cl
	host := brokerHost(f.Broker)
	restart := func(ctx context.Context) error { return cl.StartBroker(ctx, f.Broker) }
	noop := func(context.Context) error { return nil }
	fw := cl.firewall()
	others := func() []string {
		var hs []string
		for i := 1; i <= t.cfg.Brokers; i++ {
			if i != f.Broker {
				hs = append(hs, brokerHost(i))
			}
		}
		return hs
	}
	switch f.Kind {
	case Kill, Stop, KillLeader, StopLeader:
		return restart, cl.StopBroker(ctx, f.Broker, f.Kind == Kill || f.Kind == KillLeader)
	case KIP101:
		return t.kip101(ctx, f)
	case StallKill:
		return t.stallKill(ctx, f)
	case Bounce:
		for range 2 {
			if err := cl.StopBroker(ctx, f.Broker, true); err != nil {
				return noop, err
			}
			if err := sleep(ctx, t.cfg.SessionTimeout); err != nil {
				return noop, err
			}
			if err := cl.StartBroker(ctx, f.Broker); err != nil {
				return noop, err
			}
		}
		return noop, nil
	case Pause:
		// A broker killed meanwhile (another fault) needs no SIGCONT.
		return func(context.Context) error {
				if !cl.Running(f.Broker) {
					return nil
				}
				return cl.Signal(f.Broker, syscall.SIGCONT)
			},
			cl.Signal(f.Broker, syscall.SIGSTOP)
	case IsolateBrokers, Isolate, Split:
		var cut []string
		switch f.Kind {
		case IsolateBrokers:
			cut = others()
		case Isolate:
			cut = append(append(others(), cl.ZKHosts()...), clientHost)
		case Split:
			// The minority: the target and the next (n-1)/2 - 1 brokers.
			n := t.cfg.Brokers
			minority := []int{f.Broker}
			for i := 1; len(minority) < (n-1)/2; i++ {
				minority = append(minority, (f.Broker-1+i)%n+1)
			}
			for _, m := range minority {
				var majority []string
				for i := 1; i <= n; i++ {
					if !slices.Contains(minority, i) {
						majority = append(majority, brokerHost(i))
					}
				}
				if err := fw.Isolate(ctx, brokerHost(m), append(majority, cl.ZKHosts()...)); err != nil {
					return fw.Heal, err
				}
			}
			return fw.Heal, nil
		}
		return fw.Heal, fw.Isolate(ctx, host, cut)
	case ZKStop:
		return cl.StartZooKeeper, cl.StopZooKeeper(ctx)
	case ZKKillMinority, ZKKillMajority, ZKPartitionMinority, ZKPartitionMajority:
		return t.applyEnsemble(ctx, f)
	case IsolateKill:
		if err := fw.Isolate(ctx, host, others()); err != nil {
			return fw.Heal, err
		}
		heal := func(ctx context.Context) error {
			return errors.Join(fw.Heal(ctx), restart(ctx))
		}
		// Long enough for the isolated leader to drop its followers from
		// the ISR, and to acknowledge alone for a while.
		if err := sleep(ctx, t.cfg.LagTime+time.Second); err != nil {
			return heal, err
		}
		if err := cl.StopBroker(ctx, f.Broker, true); err != nil {
			return heal, err
		}
		t.note("%s: killed after %v isolated", f, t.cfg.LagTime+time.Second)
		return heal, nil
	case SlowKill:
		var slowed []string // what this fault shaped, for its heal to undo
		heal := func(ctx context.Context) error {
			var errs []error
			for _, h := range slowed {
				errs = append(errs, cl.Unshape(ctx, h))
			}
			return errors.Join(append(errs, restart(ctx))...)
		}
		for _, h := range others() {
			if err := cl.Shape(ctx, h, "600kbit"); err != nil {
				return heal, err
			}
			slowed = append(slowed, h)
		}
		// Killed before the followers have trailed for
		// replica.lag.time.max.ms: still in the ISR.
		if err := sleep(ctx, t.cfg.LagTime*3/4); err != nil {
			return heal, err
		}
		return heal, cl.StopBroker(ctx, f.Broker, true)
	case LoseTail, LoseTailFollower:
		return t.loseTails(ctx, f, []int{f.Broker})
	case LoseTailAll:
		var all []int
		for b := 1; b <= t.cfg.Brokers; b++ {
			all = append(all, b)
		}
		return t.loseTails(ctx, f, all)
	case LoseTailRejoin:
		return t.loseTailRejoin(ctx, f)
	case DiskFullLeader, DiskFullFollower:
		return t.diskFull(f)
	case RetentionJump, RetentionSize:
		return t.retention(ctx, f)
	case Admin:
		return t.admin(ctx, f)
	case Oneway, ZKCutController, ZKCutBroker:
		return t.partial(ctx, f)
	}
	return noop, fmt.Errorf("faults: unknown nemesis %q", f.Kind)
}

// flushPoint is the flushed end of p on broker b: what a 0.7 broker shows.
func (t *trial) flushPoint(ctx context.Context, b int, p partition) (int64, error) {
	c, err := newConn(ctx, t.cl.Dial, t.cl.BrokerAddr(b), 2*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.latest(p.topic, p.part)
}

func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}
