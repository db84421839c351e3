package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/netdb11/kafka/experiments/faults/check"
	"github.com/netdb11/kafka/experiments/kit"
)

// TrialConfig is one trial: a cluster, a workload, a nemesis and a seed.
type TrialConfig struct {
	Seed    int64
	Nemesis string // one of Nemeses
	Faults  int    // how many times the nemesis strikes (default 1)
	Setup   string // a name in Setups (default "append")
	Brokers int    // default 3
	// ZooKeeper is ZKStandalone (default) or ZKEnsemble (ensemble.go).
	ZooKeeper string

	Length time.Duration // the workload's run (default 12 s)
	// Quick shortens a replicated trial's default Length from 16 s to what
	// its fault needs: 12 s, or twice the fault's duration where it is
	// longer (isolate-kill, stall-kill: 16 s). The quick run's (make
	// faults, issue 23: under 6 minutes); seeds replay the same schedule
	// only with the same Quick.
	Quick      bool
	FaultFor   time.Duration // a fault's shortest duration (default 2 s)
	Batch      int           // messages per request (default 10)
	Interval   time.Duration // between a producer's requests (default 20 ms)
	Size       int           // payload bytes (default 0: drawn per message from the seed, 1 byte to 10 KiB; messageSize)
	Timeout    time.Duration // a request's timeout (default 2 s)
	FlushMs    int           // log.default.flush.interval.ms (default 1000)
	FlushEvery int           // log.flush.interval in messages (default 10000)
	// Clients says which clients a replicated trial runs: ClientsWire
	// (the harness's wire client alone), ClientsLibrary (the producer
	// library and the consumers) or ClientsBoth (the default). The 2011
	// system's trials run the wire client only.
	Clients string

	SessionTimeout time.Duration // zk.sessiontimeout.ms (default 3 s)
	LagTime        time.Duration // replica.lag.time.max.ms (default 2 s)
	Bound          time.Duration // the whole trial's time bound (default Length + 2 min)

	Bin    string // directory of kafka-server
	Out    string // where the history and logs go (a directory of its own)
	Logger *slog.Logger
	// Trace, when set, hears of what the trial makes and must remove:
	// ("dir", its working directory and the testbed's state directory),
	// ("testbed", the testbed's run id); and ("fault", the fault) once a
	// fault has been applied, before it is healed.
	Trace func(kind, name string)
}

func (c *TrialConfig) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Faults == 0 {
		c.Faults = 1
	}
	if c.Setup == "" {
		c.Setup = AckAppend
	}
	if c.Brokers == 0 {
		c.Brokers = 3
	}
	if c.ZooKeeper == "" {
		c.ZooKeeper = ZKStandalone
	}
	def(&c.SessionTimeout, 3*time.Second)
	if c.Nemesis == KIP101 || c.Nemesis == LoseTailRejoin || c.Nemesis == Compound || c.Nemesis == StallKill {
		// A follower must stay in the leader's ISR while it restarts (its
		// old ZooKeeper registration expires first): Kafka's default of
		// 10 s allows that (0.8: a 6 s session); 8 s here. Compound
		// schedules draw from these nemeses, and rule 1 of issue 21 lives
		// only where the lag time exceeds the session. Stall-kill waits
		// up to three quarters of it for its acknowledgements after the
		// cut: with 2 s, a loaded machine spent all of it installing the
		// cut's iptables rules (TestAcks1LosesUnderLeaderKill, 3 December).
		def(&c.LagTime, 8*time.Second)
	}
	if c.Nemesis == KIP101 || c.Nemesis == LoseTailRejoin {
		// F back after about its session, the leader killed, then F
		// elected after the leader's session.
		def(&c.FaultFor, 2*c.SessionTimeout+8*time.Second)
		def(&c.Length, 2*c.FaultFor+2*time.Second)
	}
	def(&c.LagTime, 2*time.Second)
	if slices.Contains(retentionNemeses, c.Nemesis) {
		def(&c.Length, retentionLength)
	}
	if c.Nemesis == Admin {
		def(&c.Length, 2*adminFor+2*time.Second)
	}
	su, err := setup(c.Setup)
	replicated := err == nil && su.Replicated()
	if replicated {
		// Faults outlast the ZooKeeper session, so that the controller
		// sees a dead broker and elects.
		def(&c.FaultFor, c.SessionTimeout+time.Second)
		if c.Nemesis != Compound {
			// Room for the fault inside the run (Schedule caps a fault at
			// half the run): 16 s up to a 6 s session; quick, 12 s or
			// twice the fault's stretched duration.
			least := 16 * time.Second
			if c.Quick {
				least = max(12*time.Second, 2*c.stretch(c.Nemesis))
			}
			def(&c.Length, max(least, 2*c.FaultFor+2*time.Second))
		}
	}
	def(&c.FaultFor, 2*time.Second)
	if c.Nemesis == Compound && c.Length == 0 {
		// The run ends a warm-up after the last fault's end.
		var end time.Duration
		for _, f := range ScheduleCompound(c.Seed, c.Setup, c.Brokers, c.ZooKeeper == ZKEnsemble, c.stretch) {
			end = max(end, f.At+f.For)
		}
		c.Length = end + compoundWarm
	}
	def(&c.Length, 12*time.Second)
	def(&c.Interval, 20*time.Millisecond)
	def(&c.Timeout, 2*time.Second)
	def(&c.Bound, c.Length+2*time.Minute)
	if c.Batch == 0 {
		c.Batch = 10
	}
	if c.Clients == "" {
		c.Clients = ClientsBoth
	}
	if c.FlushMs == 0 {
		c.FlushMs = 1000
	}
	if c.FlushEvery == 0 {
		c.FlushEvery = 10000
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Nemesis != Compound {
		c.FaultFor = c.stretch(c.Nemesis)
	}
}

// Window is a fault as it happened, relative to the trial's start.
type Window struct {
	Fault
	Start, End time.Duration
	Err        string `json:",omitempty"`
	// Failed: the harness could not apply the fault (Err says why), as
	// opposed to a fault that found nothing to strike (errNoTarget). The
	// trial is invalid. A heal that fails is a note: what it leaves
	// broken, the health check after the faults finds.
	Failed bool `json:",omitempty"`
}

// notApplied is why a trial whose faults were not all applied is invalid:
// one reason per fault the harness failed to apply (Window.Failed).
func notApplied(ws []Window) []string {
	var why []string
	for _, w := range ws {
		if w.Failed {
			why = append(why, fmt.Sprintf("%s was not applied: %s", w.Fault, w.Err))
		}
	}
	return why
}

// TrialResult is what a trial found.
type TrialResult struct {
	Config  TrialConfig
	Check   *check.Result
	History string   // path of the history file
	Windows []Window // the faults as they happened
	// Rate is the acknowledged messages per second (sent ones in AckNone
	// mode) in each Bin of the run: the timeline's throughput.
	Rate []float64
	Bin  time.Duration
	// Outage is the longest a partition went without an acknowledged
	// write (see Outage).
	Outage time.Duration
	// Refusing is the longest a partition refused writes (see Refusing).
	Refusing time.Duration
	Notes    []string
	Took     time.Duration
}

// Verdict is the trial's one line.
func (r *TrialResult) Verdict() string {
	return fmt.Sprintf("seed %d %s %s: %s", r.Config.Seed, r.Config.Nemesis, r.Config.Setup, r.Check.Verdict())
}

type trial struct {
	cfg   TrialConfig
	setup Setup
	cl    *Cluster
	w     *workload
	start time.Time
	began time.Time // when RunTrial began, for phase notes
	mu    sync.Mutex
	notes []string
	cuts  []check.Event // lost tails (check.TypeCut)
	// powerLost holds, for each broker a power loss struck, the process
	// it killed: while no other process has started in its place, the
	// broker is still down with its tail lost (loseTails).
	powerLost map[int]*kit.Proc
	mon       *monitor      // the invariant monitor (replicated trials)
	ret       *retained     // the retention nemeses' topic, when they strike
	polls     []check.Event // the consumers' (consumers.go)
}

func (t *trial) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	t.cfg.Logger.Info(s)
	t.mu.Lock()
	t.notes = append(t.notes, s)
	t.mu.Unlock()
}

// phase notes that a phase of the trial ended, with the time since the
// trial began: where a trial's time goes (issue 23: the quick run's bound).
func (t *trial) phase(name string) {
	t.note("phase %s: +%.1f s", name, time.Since(t.began).Seconds())
}

// topic is the one topic the workload writes.
const topic = "faults"

// RunTrial runs one trial: a fresh cluster, the workload for Length with
// the seed's faults, every fault healed, every broker up again, then two
// readers read every partition from the start to the end and the checker
// judges the history. It stops within Bound and removes everything it made
// but its output directory (the history and the servers' logs).
func RunTrial(ctx context.Context, cfg TrialConfig) (res *TrialResult, err error) {
	cfg.defaults()
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, cfg.Bound)
	defer cancel()
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "faults-")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(work)) }()
	if cfg.Trace != nil {
		cfg.Trace("dir", work)
	}

	su, err := setup(cfg.Setup)
	if err != nil {
		return nil, err
	}
	if err := cfg.checkZooKeeper(); err != nil {
		return nil, err
	}
	if su.RF > cfg.Brokers {
		return nil, fmt.Errorf("faults: %s needs %d brokers, have %d", su.Name, su.RF, cfg.Brokers)
	}
	props := map[string]string{
		"num.partitions":                          "1",
		"log.flush.interval":                      strconv.Itoa(cfg.FlushEvery),
		"log.default.flush.interval.ms":           strconv.Itoa(cfg.FlushMs),
		"log.default.flush.scheduler.interval.ms": strconv.Itoa(min(cfg.FlushMs, 200)),
	}
	for k, v := range su.props(cfg.LagTime) {
		props[k] = v
	}
	if strikesWith(cfg, retentionNemeses) {
		maps.Copy(props, retentionProps())
	}
	if needsDisks(cfg) {
		unmount, merr := mountDisks(ctx, work, cfg.Brokers)
		// Unmounted after the cluster's close, before work's removal.
		defer func() { err = errors.Join(err, unmount()) }()
		if merr != nil {
			return nil, merr
		}
	}
	cl, err := StartCluster(ctx, ClusterConfig{
		Brokers: cfg.Brokers, Bin: cfg.Bin, Dir: work, SessionTimeout: cfg.SessionTimeout, Logger: cfg.Logger,
		Props: props, Trace: cfg.Trace, Admin: su.Replicated(), Ensemble: cfg.ZooKeeper == ZKEnsemble,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		err = errors.Join(err, cl.Close(), keepLogs(work, cfg.Out))
	}()

	t := &trial{cfg: cfg, cl: cl, setup: su, began: began}
	t.phase("cluster started")
	t.w = &workload{cl: cl, setup: su, batch: cfg.Batch, interval: cfg.Interval, size: cfg.Size, seed: cfg.Seed,
		timeout: cfg.Timeout, gate: &sync.RWMutex{}, sends: map[check.ID]*check.Event{}, clients: cfg.Clients}
	t.w.note = t.note
	if strikesWith(cfg, retentionNemeses) {
		t.w.budget = retentionBudget
	}
	if su.Replicated() {
		// One replicated topic with a partition per broker, so that every
		// broker leads one at the start.
		if err := cl.CreateTopic(ctx, topic, cfg.Brokers, su.RF); err != nil {
			return nil, err
		}
		for p := range cfg.Brokers {
			t.w.parts = append(t.w.parts, partition{tp: check.TP{Topic: topic, Partition: int32(p)}, topic: topic, part: int32(p)})
		}
		if err := cl.WaitHealthy(ctx, topic, cfg.Brokers, time.Minute); err != nil {
			return nil, err
		}
		// The replication invariants are checked while the trial runs,
		// up to the final reads (issue 23).
		if t.mon, err = t.startMonitor(ctx); err != nil {
			return nil, err
		}
		defer t.mon.stop()
		if strikesWith(cfg, retentionNemeses) {
			if err := t.startRetained(ctx); err != nil {
				return nil, err
			}
		}
	} else {
		// The 2011 system: one partition of the topic on every broker; each
		// is its own log, named in the history by its broker.
		for b := 1; b <= cfg.Brokers; b++ {
			t.w.parts = append(t.w.parts, partition{tp: check.TP{Topic: fmt.Sprintf("%s@broker%d", topic, b)},
				topic: topic, part: 0, broker: b})
		}
	}

	t.phase("topic healthy")
	faults := Schedule(cfg.Seed, cfg.Nemesis, cfg.Brokers, cfg.Faults, cfg.Length, cfg.FaultFor)
	if cfg.Nemesis == Compound {
		faults = ScheduleCompound(cfg.Seed, cfg.Setup, cfg.Brokers, cfg.ZooKeeper == ZKEnsemble, cfg.stretch)
	}
	t.start = time.Now()
	t.w.start = t.start
	wctx, stopWork := context.WithTimeout(ctx, cfg.Length)
	defer stopWork()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); t.w.run(wctx) }()
	var cs *consumers
	if t.w.usesLibrary() {
		cs = t.w.startConsumers(ctx, t.start, cfg.Length)
		defer cs.stop()
	}
	var windows []Window
	if cfg.Nemesis == Compound {
		windows = t.runOverlapping(wctx, faults)
	} else {
		windows = t.runFaults(wctx, faults)
	}
	wg.Wait()
	t.phase(fmt.Sprintf("workload ended (length %v)", cfg.Length))

	// ZooKeeper whole again (every member of the ensemble) before the brokers.
	if err := cl.StartZooKeeper(ctx); err != nil {
		return nil, err
	}
	for b := 1; b <= cfg.Brokers; b++ {
		if !cl.Running(b) {
			if err := cl.StartBroker(ctx, b); err != nil {
				return nil, err
			}
		}
	}
	invalid := notApplied(windows)
	if su.Replicated() {
		// Wait for every replica back in the ISR, then for a flush: a
		// replica shows only what is below the HW and flushed
		// (waitFlushed: until the logs say so, twice the flush interval
		// at most).
		if err := cl.WaitHealthy(ctx, topic, cfg.Brokers, time.Minute); err != nil {
			t.note("not healthy after the faults: %v", err)
			invalid = append(invalid, fmt.Sprintf("cluster not healthy a minute after the faults: %v", err))
		}
		t.phase("healthy after the faults")
		took, ok := t.waitFlushed(ctx, 2*time.Duration(cfg.FlushMs)*time.Millisecond)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !ok {
			t.note("the logs had not settled (all flushed, replicas alike, the HW at the end) after %v: read anyway", took.Round(time.Millisecond))
		}
		t.phase("flushed")
		t.polls = t.drain(ctx, cs)
		t.phase("group drained")
	} else {
		// A clean restart of every broker, so that everything written is
		// flushed and visible to the readers (a 0.7 broker shows only
		// flushed messages; a clean shutdown flushes).
		for b := 1; b <= cfg.Brokers; b++ {
			if err := cl.StopBroker(ctx, b, false); err != nil {
				return nil, err
			}
			if err := cl.StartBroker(ctx, b); err != nil {
				return nil, err
			}
		}
	}
	events := []check.Event{{Type: check.TypeMeta, Seed: cfg.Seed, Config: map[string]string{
		"nemesis": cfg.Nemesis, "setup": cfg.Setup, "configuration": su.String(), "brokers": strconv.Itoa(cfg.Brokers),
		"length": cfg.Length.String(), "zk.sessiontimeout.ms": strconv.FormatInt(cfg.SessionTimeout.Milliseconds(), 10),
		"replica.lag.time.max.ms": strconv.FormatInt(cfg.LagTime.Milliseconds(), 10),
		"clients":                 t.w.clientsMeta(),
		"zookeeper":               cfg.ZooKeeper,
	}}}
	for _, w := range windows {
		events = append(events, check.Event{Type: check.TypeNemesis, Name: w.Kind, Target: brokerHost(w.Broker),
			Start: t.start.Add(w.Start), End: t.start.Add(w.End), Error: w.Err, StartMono: int64(w.Start), Mono: int64(w.End)})
	}
	invs, line := t.mon.stop()
	if line != "" {
		t.note("%s", line)
	}
	events = append(events, invs...)
	events = append(events, t.finishRetained(ctx)...)
	t.mu.Lock()
	events = append(events, t.cuts...)
	t.mu.Unlock()
	t.w.mu.Lock()
	for _, id := range t.w.order {
		events = append(events, *t.w.sends[id])
	}
	events = append(events, t.w.reads...)
	t.w.mu.Unlock()
	events = append(events, t.polls...)
	t.phase("monitor stopped")
	// Two readers read each partition to its end, one after the other;
	// the partitions at once (a quicker make faults, issue 23).
	finals := []string{"final1", "final2"}
	read := make([][][]check.Event, len(t.w.parts))
	errs := make([][]error, len(t.w.parts))
	var readers sync.WaitGroup
	for i, p := range t.w.parts {
		read[i], errs[i] = make([][]check.Event, len(finals)), make([]error, len(finals))
		readers.Go(func() {
			for j, reader := range finals {
				read[i][j], errs[i][j] = t.w.readAll(ctx, reader, p)
			}
		})
	}
	readers.Wait()
	for j, reader := range finals {
		for i, p := range t.w.parts {
			events = append(events, read[i][j]...)
			if err := errs[i][j]; err != nil {
				t.note("%s", err)
				invalid = append(invalid, fmt.Sprintf("%s did not finish reading %s", reader, p.tp))
			}
		}
	}
	t.phase("final reads")
	// Each replica's bytes below the end the readers reached (the HW): in
	// the 2011 system one per partition, in a replicated topic every copy,
	// which must agree.
	for _, p := range t.w.parts {
		var end int64
		for _, e := range events {
			if e.Type == check.TypeEnd && e.Topic == p.tp.Topic && e.Partition == p.tp.Partition {
				end = max(end, e.Offset)
			}
		}
		holders := []int{p.broker}
		if su.Replicated() {
			holders = nil
			if pm, err := cl.PartitionInfo(ctx, topic, p.part); err == nil {
				for _, r := range pm.Replicas {
					holders = append(holders, int(r))
				}
			} else {
				t.note("replicas of %s: %v", p.tp, err)
			}
		}
		for _, b := range holders {
			sum, err := hashTo(partitionDir(cl.BrokerDir(b), p.topic, p.part), end)
			var short *shortError
			if errors.As(err, &short) {
				// Short of the committed end: the checker's diverged.
				events = append(events, check.Event{Type: check.TypeReplica, Topic: p.tp.Topic, Partition: p.tp.Partition,
					Broker: int32(b), HW: end, Held: short.held})
				continue
			}
			if err != nil {
				t.note("hash %s on broker%d: %v", p.tp, b, err)
				continue
			}
			events = append(events, check.Event{Type: check.TypeReplica, Topic: p.tp.Topic, Partition: p.tp.Partition,
				Broker: int32(b), HW: end, SHA256: sum})
		}
	}

	for _, why := range invalid {
		events = append(events, check.Event{Type: check.TypeInvalid, Error: why})
	}
	res = &TrialResult{Config: cfg, Windows: windows, History: filepath.Join(cfg.Out, "history.jsonl")}
	chronological(events)
	t.phase("replicas hashed")
	// The history is written while the checker reads it (neither changes
	// it).
	written := make(chan error, 1)
	go func() { written <- writeHistory(res.History, events) }()
	res.Check = check.Check(events)
	res.Outage = Outage(events)
	res.Refusing = Refusing(events)
	res.Bin = 250 * time.Millisecond
	res.Rate = rate(events, t.start, cfg.Length, res.Bin, cfg.Setup == AckNone)
	if err := <-written; err != nil {
		return nil, err
	}
	t.phase("checked, history written")
	t.mu.Lock()
	res.Notes = t.notes
	t.mu.Unlock()
	res.Took = time.Since(began)
	return res, ctx.Err()
}
