package faults

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/experiments/faults/check"
	"github.com/netdb11/kafka/experiments/kit"
)

// TestEnsembleNemesesRefusedStandalone: an ensemble nemesis asked of a
// standalone ZooKeeper is refused before anything starts (no root needed),
// by a trial and by a suite; --matrix=full's EnsembleCells runs it on the
// ensemble instead.
func TestEnsembleNemesesRefusedStandalone(t *testing.T) {
	for _, n := range ensembleOnly {
		if !slices.Contains(Nemeses, n) {
			t.Errorf("%s is not in Nemeses", n)
		}
		if describeNemesis[n] == "" {
			t.Errorf("%s has no description for the report", n)
		}
		_, err := RunTrial(context.Background(), TrialConfig{Nemesis: n, Setup: "safe", Out: t.TempDir()})
		if !errors.Is(err, ErrNeedsEnsemble) {
			t.Errorf("RunTrial(%s, standalone) = %v, want ErrNeedsEnsemble", n, err)
		}
		_, err = RunSuite(context.Background(), SuiteConfig{Pairs: [][2]string{{n, "safe"}}, Trials: 1, Out: t.TempDir()})
		if !errors.Is(err, ErrNeedsEnsemble) {
			t.Errorf("RunSuite(%s, standalone) = %v, want ErrNeedsEnsemble", n, err)
		}
		cfg := SuiteConfig{EnsembleCells: true}
		if got := cfg.zooKeeper(n); got != ZKEnsemble {
			t.Errorf("EnsembleCells: %s runs on %s, want the ensemble", n, got)
		}
		if got := cfg.zooKeeper(Kill); got != ZKStandalone {
			t.Errorf("EnsembleCells: kill runs on %s, want standalone", got)
		}
	}
	_, err := RunTrial(context.Background(), TrialConfig{Nemesis: Kill, ZooKeeper: "quorum", Out: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "standalone or ensemble") {
		t.Errorf("ZooKeeper quorum: %v, want a refusal", err)
	}
	full := FullPairs()
	for _, n := range ensembleOnly {
		if !slices.Contains(full, [2]string{n, "safe"}) {
			t.Errorf("--matrix=full lacks %s safe", n)
		}
	}
}

// TestCompoundDrawsEnsembleOnlyWithIt: a compound schedule draws the
// ensemble nemeses when the ensemble is on and never without it, so the
// standalone schedules of every seed are what they were.
func TestCompoundDrawsEnsembleOnlyWithIt(t *testing.T) {
	one := func(string) time.Duration { return 5 * time.Second }
	drawn := map[string]bool{}
	for seed := int64(1); seed <= 300; seed++ {
		for _, f := range ScheduleCompound(seed, "safe", 3, false, one) {
			if NeedsEnsemble(f.Kind) {
				t.Fatalf("seed %d standalone draws %s", seed, f.Kind)
			}
		}
		for _, f := range ScheduleCompound(seed, "safe", 3, true, one) {
			if NeedsEnsemble(f.Kind) {
				drawn[f.Kind] = true
				if f.Broker != 0 || f.Role != "" {
					t.Errorf("seed %d: %s targets broker %d role %q", seed, f.Kind, f.Broker, f.Role)
				}
			}
		}
	}
	for _, n := range ensembleOnly {
		if !drawn[n] {
			t.Errorf("300 ensemble seeds never draw %s", n)
		}
	}
	if got := zkHosts(true); !slices.Equal(got, []string{"zk1", "zk2", "zk3"}) {
		t.Errorf("ensemble hosts %v", got)
	}
	if got := zkHosts(false); !slices.Equal(got, []string{zkHost}) {
		t.Errorf("standalone hosts %v", got)
	}
}

// TestEnsembleCluster brings up a cluster on the ensemble (hosts zk1..zk3,
// brokers given all three servers) and runs each ensemble nemesis' inject
// and heal against it: killing or cutting off the leader leaves a quorum
// that elects another; killing or cutting off two leaves none serving; each
// heal brings all three back with no rule left.
func TestEnsembleCluster(t *testing.T) {
	needRoot(t)
	bin := buildServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := StartCluster(ctx, ClusterConfig{Brokers: 2, Bin: bin, Dir: t.TempDir(), SessionTimeout: 3 * time.Second, Ensemble: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cl.Close(); err != nil {
			t.Error(err)
		}
	}()
	e := cl.Ensemble()
	for _, h := range []string{"zk1", "zk2", "zk3"} {
		if _, err := cl.Testbed().Host(h); err != nil {
			t.Fatalf("no testbed host %s: %v", h, err)
		}
	}
	if _, err := cl.Testbed().Host(zkHost); err == nil {
		t.Error("the ensemble's testbed has the standalone zookeeper host too")
	}
	if n := strings.Count(cl.ZKConnect(), ","); n != 2 {
		t.Errorf("connect string %q: want three servers", cl.ZKConnect())
	}
	// The brokers registered through the ensemble: a topic can be made.
	if err := cl.CreateTopic(ctx, "ensemble", 2, 2); err != nil {
		t.Fatal(err)
	}
	serving := func() (n int) {
		for _, id := range e.IDs() {
			if e.Mode(ctx, id) != "" {
				n++
			}
		}
		return n
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		if err := kit.WaitFor(ctx, time.Minute, what, nil, ok); err != nil {
			t.Fatal(err)
		}
	}
	tr := &trial{cfg: TrialConfig{Logger: cl.log, Brokers: 2}, cl: cl, w: &workload{}}
	// The invariant monitor reads the ensemble (it dialled the standalone
	// server's host, absent here, and every replicated trial on the
	// ensemble ended in a harness error).
	for p := range int32(2) {
		tr.w.parts = append(tr.w.parts, partition{tp: check.TP{Topic: "ensemble", Partition: p}, topic: "ensemble", part: p})
	}
	mon, err := tr.startMonitor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Judged samples need ZooKeeper's state (a round may miss it while
	// the monitor's session connects).
	waitFor("the monitor's rounds", func() bool {
		mon.mu.Lock()
		defer mon.mu.Unlock()
		return mon.judged >= 10
	})
	mon.stop()
	for _, kind := range ensembleOnly {
		leader := e.Leader(ctx)
		if leader == 0 {
			t.Fatalf("%s: no leader before it", kind)
		}
		heal, err := tr.applyEnsemble(ctx, Fault{Kind: kind})
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if kind == ZKKillMinority || kind == ZKPartitionMinority {
			waitFor(kind+": another leader", func() bool { l := e.Leader(ctx); return l != 0 && l != leader })
			waitFor(kind+": two serving", func() bool { return serving() == 2 })
		} else {
			waitFor(kind+": none serving", func() bool { return serving() == 0 })
		}
		if kind == ZKPartitionMinority || kind == ZKPartitionMajority {
			if n, err := cl.Rules(ctx, zkMemberHost(leader)); err != nil || n == 0 {
				t.Errorf("%s: %d rules in the leader's host, %v", kind, n, err)
			}
		}
		if err := heal(ctx); err != nil {
			t.Fatalf("heal %s: %v", kind, err)
		}
		if n := serving(); n != 3 {
			t.Errorf("healed %s: %d serving, want 3", kind, n)
		}
		for _, h := range cl.ZKHosts() {
			if n, err := cl.Rules(ctx, h); err != nil || n != 0 {
				t.Errorf("healed %s: %d rules in %s, %v", kind, n, h, err)
			}
		}
	}
}

// TestZooKeeperOfRereport: a rebuilt report says where the histories'
// ZooKeeper ran, from their meta events.
func TestZooKeeperOfRereport(t *testing.T) {
	trial := func(zk string) *TrialResult { return &TrialResult{Config: TrialConfig{ZooKeeper: zk}} }
	for _, tt := range []struct {
		modes    []string
		mode     string
		ensCells bool
	}{
		{[]string{"", ""}, ZKStandalone, false}, // before the ensemble
		{[]string{ZKEnsemble, ZKEnsemble}, ZKEnsemble, false},
		{[]string{ZKStandalone, ZKEnsemble}, ZKStandalone, true}, // a full matrix
	} {
		var c Cell
		for _, m := range tt.modes {
			c.Trials = append(c.Trials, trial(m))
		}
		mode, ens := zooKeeperOf([]*Cell{&c})
		if mode != tt.mode || ens != tt.ensCells {
			t.Errorf("%q: %s %v, want %s %v", tt.modes, mode, ens, tt.mode, tt.ensCells)
		}
	}
}

// TestEnsembleTrial runs a whole replicated trial on the ensemble, with
// every client: the monitor, the group consumer and the admin tools are
// given the ensemble's connect string. They were given the standalone
// server's, absent here: every replicated trial on the ensemble ended in a
// harness error once the monitor came, and the group consumer, reaching no
// ZooKeeper, read nothing (every acknowledged message unseen). Killing an
// ensemble member makes the group consumer's session reconnect with its
// watches, which met go-zookeeper's race on its last zxid under -race (CI,
// 5 December) until zkcoord gated the library's connections (libloop.go).
func TestEnsembleTrial(t *testing.T) {
	needRoot(t)
	bin := buildServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := RunTrial(ctx, TrialConfig{Seed: 1, Nemesis: ZKKillMinority, Setup: "safe", ZooKeeper: ZKEnsemble, Quick: true,
		Bin: bin, Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.Verdict())
	// VALID: among the rest, no acknowledged message unseen by the
	// group consumer.
	if !res.Check.Valid() || res.Check.Acked == 0 {
		t.Errorf("a zk-kill-minority trial on the ensemble: %s", res.Verdict())
	}
	if len(res.Windows) != 1 || res.Windows[0].Err != "" {
		t.Errorf("windows %+v", res.Windows)
	}
}
