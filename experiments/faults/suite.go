package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/cli/progress"
	"github.com/netdb11/kafka/experiments/faults/check"
)

// SuiteConfig is a matrix of trials: every nemesis × every configuration, each
// with Trials seeds (Seed, Seed+1, ...).
type SuiteConfig struct {
	Nemeses []string
	Configs []string // names in Setups
	// Pairs, when set, replaces the product of Nemeses and Configs with
	// these (nemesis, configuration) cells.
	Pairs  [][2]string
	Trials int
	Seed   int64
	// Trial is the template of every trial (Seed, Nemesis, Setup and Out are
	// set per trial).
	Trial TrialConfig
	Out   string
	// Verdicts receives one line per trial as it ends.
	Verdicts io.Writer
	// Progress, when set, receives one line per trial as it begins ("faults
	// 3/11 (2m10s): kill append seed 1"): a trial is 25 to 70 s of silence
	// otherwise. Lines rather than a redrawn bar, on a terminal too, since
	// the verdict lines go to the same screen.
	Progress io.Writer
	Logger   *slog.Logger
	// EnsembleCells, when set, runs the cells of nemeses that need the
	// ZooKeeper ensemble (NeedsEnsemble) on it whatever Trial.ZooKeeper
	// says (--matrix=full); unset, such cells need Trial.ZooKeeper ensemble.
	EnsembleCells bool
}

// QuickPairs are the cells of a quick run (make faults): each nemesis where
// it shows something, the 2011 system beside the replicated one.
var QuickPairs = [][2]string{
	{Kill, AckAppend}, {LoseTail, AckAppend}, {LoseTail, AckFlush},
	{StallKill, "acks1"}, {Kill, "safe"}, {IsolateKill, "unclean"}, {IsolateKill, "safe"},
	{Pause, "safe"}, {Split, "safe"}, {ZKStop, "safe"}, {KIP101, "hw"},
	{Compound, "safe"}, {Compound, "acks1"},
}

// UnsafePairs are the cells where a configuration that gives up part of
// the modern promise is known to lose acknowledged writes (issue 13's
// safety matrix), with the same nemesis against a configuration that
// keeps it beside each: acks=1 under leader kills (plain, and with the
// followers trailing, and cut from the leader: stall-kill, where safe
// must lose nothing); unclean election under Jepsen 2013's partition
// (minisr1 and safe: the same schedule with clean elections); 0.8's
// high-watermark truncation under KIP-101's schedule (minisr1: the same
// configuration with epoch truncation); and min.insync.replicas=1 against 2
// when the leader is cut off from its followers (what min.insync=2 costs).
var UnsafePairs = [][2]string{
	{KillLeader, "acks1"}, {SlowKill, "acks1"}, {StallKill, "acks1"}, {StallKill, "safe"},
	{IsolateKill, "unclean"}, {IsolateKill, "minisr1"}, {IsolateKill, "safe"},
	{KIP101, "hw"}, {KIP101, "minisr1"},
	{IsolateBrokers, "minisr1"}, {IsolateBrokers, "safe"},
}

// replicatedOnly are the nemeses that need a replicated topic (a leader,
// followers, an ISR).
var replicatedOnly = []string{KillLeader, StopLeader, KIP101, IsolateKill, SlowKill, StallKill, LoseTailFollower, LoseTailRejoin,
	DiskFullFollower, RetentionJump, RetentionSize, Admin, Oneway, ZKCutController, ZKCutBroker}

// applies reports whether nemesis can strike setup: the 2011 configurations
// leave out the nemeses of the replication layer.
func applies(setup, nemesis string) bool {
	return Setups[setup].Replicated() || !contains(replicatedOnly, nemesis)
}

// FullPairs is every configuration × every nemesis that applies to it.
func FullPairs() [][2]string {
	var ps [][2]string
	for _, a := range SetupNames {
		for _, n := range Nemeses {
			if applies(a, n) {
				ps = append(ps, [2]string{n, a})
			}
		}
	}
	return ps
}

// Shard returns the cells of one of n runs that split pairs side by side,
// spec "K/N" (1 <= K <= N): every Nth cell from the Kth, so that each run
// gets some of every configuration. The runs' reports become one with
// kafka-faults --rereport=DIR --merge=OTHERS.
func Shard(pairs [][2]string, spec string) ([][2]string, error) {
	var k, n int
	if _, err := fmt.Sscanf(spec, "%d/%d", &k, &n); err != nil || n < 1 || k < 1 || k > n || fmt.Sprintf("%d/%d", k, n) != spec {
		return nil, fmt.Errorf("%q: want K/N with 1 <= K <= N", spec)
	}
	var out [][2]string
	for i := k - 1; i < len(pairs); i += n {
		out = append(out, pairs[i])
	}
	return out, nil
}

// Matrices are the named presets of kafka-faults --matrix.
var Matrices = map[string]func() [][2]string{
	"quick":  func() [][2]string { return QuickPairs },
	"unsafe": func() [][2]string { return UnsafePairs },
	"full":   FullPairs,
	"soak":   func() [][2]string { return SoakPairs },
}

// SoakPairs is the soak (issue 23): compound schedules against the
// configuration that promises no loss, as many seeds as the run is given
// (kafka-faults --matrix=soak: 500 unless --trials says). A soak split
// over several runs (--seed of the next one where the last stopped) is one
// report again once their trial directories share one trials/ folder:
// kafka-faults --rereport=DIR.
var SoakPairs = [][2]string{{Compound, "safe"}}

// Cell is one configuration × nemesis of the matrix.
type Cell struct {
	Nemesis, Setup string
	Trials         []*TrialResult
	Errors         []string
}

// Suite is a finished matrix.
type Suite struct {
	Config SuiteConfig
	Cells  []*Cell
	// Recorded are cells known only by their records (another run's, or
	// this one's whose histories are gone): see Rereport.
	Recorded []CellRecord
	Started  time.Time
	Took     time.Duration
	// sorted orders Records by configuration, then nemesis (a
	// rereport's order) rather than in the order the cells ran.
	sorted bool
	// cellsStarted, when set, is when Cells' trials began (a rereport's
	// Started may be an older merged run's).
	cellsStarted time.Time
}

// Records are the suite's cells as the report shows them: Cells, then
// Recorded (sorted by configuration and nemesis when the suite was rebuilt).
func (s *Suite) Records() []CellRecord {
	var recs []CellRecord
	started := s.Started
	if !s.cellsStarted.IsZero() {
		started = s.cellsStarted
	}
	for _, c := range s.Cells {
		recs = append(recs, c.record(s.Config.Out, started))
	}
	recs = append(recs, s.Recorded...)
	if s.sorted {
		order := func(list []string, x string) int {
			if i := slices.Index(list, x); i >= 0 {
				return i
			}
			return len(list)
		}
		slices.SortStableFunc(recs, func(a, b CellRecord) int {
			if d := order(SetupNames, a.Setup) - order(SetupNames, b.Setup); d != 0 {
				return d
			}
			return order(Nemeses, a.Nemesis) - order(Nemeses, b.Nemesis)
		})
	}
	return recs
}

// TrialDir is where a trial's history, logs and figure go.
func TrialDir(out, nemesis, setup string, seed int64) string {
	return filepath.Join(out, "trials", fmt.Sprintf("%s-%s-seed-%d", nemesis, setup, seed))
}

// RunSuite runs the matrix, writing each trial's history, figure and
// verdict under Out/trials and the report at Out/report.md. A trial that
// fails (the harness, not the system under test) is recorded and the suite
// goes on; ctx's end stops it after the running trial has cleaned up.
func RunSuite(ctx context.Context, cfg SuiteConfig) (*Suite, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Verdicts == nil {
		cfg.Verdicts = io.Discard
	}
	s := &Suite{Config: cfg, Started: time.Now()}
	pairs := cfg.Pairs
	if pairs == nil {
		for _, n := range cfg.Nemeses {
			for _, a := range cfg.Configs {
				pairs = append(pairs, [2]string{n, a})
			}
		}
	}
	for _, p := range pairs {
		if !contains(Nemeses, p[0]) {
			return nil, fmt.Errorf("faults: unknown nemesis %q (want one of %s)", p[0], strings.Join(Nemeses, ", "))
		}
		if _, err := setup(p[1]); err != nil {
			return nil, err
		}
		tc := cfg.Trial
		tc.Nemesis, tc.ZooKeeper = p[0], cfg.zooKeeper(p[0])
		if err := tc.checkZooKeeper(); err != nil {
			return nil, err
		}
	}
	steps := progress.NewLines(cfg.Progress, "faults", len(pairs)*cfg.Trials)
	var saving sync.WaitGroup
	var savingMu sync.Mutex // guards saveErrs
	saveErrs := map[*Cell][]string{}
	for _, p := range pairs {
		n, a := p[0], p[1]
		{
			cell := &Cell{Nemesis: n, Setup: a}
			s.Cells = append(s.Cells, cell)
			for i := range cfg.Trials {
				if ctx.Err() != nil {
					break
				}
				tc := cfg.Trial
				tc.Seed, tc.Nemesis, tc.Setup = cfg.Seed+int64(i), n, a
				tc.ZooKeeper = cfg.zooKeeper(n)
				tc.Out = TrialDir(cfg.Out, n, a, tc.Seed)
				tc.Logger = cfg.Logger
				steps.Begin(fmt.Sprintf("%s %s seed %d", n, a, tc.Seed))
				// Every trial is checked for what it left behind
				// (namespaces, cgroups, root rules and links, processes,
				// directories), failed or not.
				tr := &Tracer{}
				outer := tc.Trace
				tc.Trace = func(kind, name string) {
					tr.Trace(kind, name)
					if outer != nil {
						outer(kind, name)
					}
				}
				res, err := RunTrial(ctx, tc)
				steps.End()
				if left := tr.Leftovers(); len(left) > 0 {
					msg := fmt.Sprintf("seed %d %s %s: harness error: left behind: %s", tc.Seed, n, a, strings.Join(left, "; "))
					cell.Errors = append(cell.Errors, msg)
					fmt.Fprintln(cfg.Verdicts, msg)
				}
				if err != nil || res == nil {
					msg := fmt.Sprintf("seed %d %s %s: harness error: %v", tc.Seed, n, a, err)
					cell.Errors = append(cell.Errors, msg)
					fmt.Fprintln(cfg.Verdicts, msg)
					continue
				}
				cell.Trials = append(cell.Trials, res)
				fmt.Fprintln(cfg.Verdicts, res.Verdict())
				// Its result and figure are saved while the next trial
				// starts (a quicker make faults, issue 23).
				saving.Go(func() {
					if err := saveTrial(tc.Out, res); err != nil {
						savingMu.Lock()
						saveErrs[cell] = append(saveErrs[cell], err.Error())
						savingMu.Unlock()
					}
				})
			}
		}
	}
	saving.Wait()
	for c, errs := range saveErrs {
		c.Errors = append(c.Errors, errs...)
	}
	s.Took = time.Since(s.Started)
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return s, err
	}
	if err := s.save(cfg.Out); err != nil {
		return s, err
	}
	return s, ctx.Err()
}

func saveTrial(dir string, r *TrialResult) error {
	b, err := json.MarshalIndent(struct {
		Verdict   string
		Counts    map[string]int
		Anomalies []check.Anomaly
		// Unpromised: what the configuration does not promise (a
		// power loss everywhere, a retry's duplicate).
		Unpromised []check.Anomaly `json:",omitempty"`
		Windows    []Window
		Notes      []string
		Took       string
	}{r.Verdict(), r.Check.Counts, first(r.Check.Anomalies, 100), first(r.Check.Unpromised, 100), r.Windows, r.Notes, r.Took.String()}, "", "  ")
	if err != nil {
		return err
	}
	return errors.Join(
		os.WriteFile(filepath.Join(dir, "result.json"), b, 0o644),
		SaveTimeline(filepath.Join(dir, "timeline.png"), r))
}

func first[T any](xs []T, n int) []T { return xs[:min(n, len(xs))] }

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Valid reports whether every trial ran and found nothing.
func (s *Suite) Valid() bool {
	for _, c := range s.Records() {
		if len(c.Errors) > 0 || c.WithAnomalies > 0 || c.Invalid > 0 {
			return false
		}
	}
	return true
}

// Verdict is the suite's one line.
func (s *Suite) Verdict() string {
	trials, bad, errs, invalid, unpromised, retried := 0, 0, 0, 0, 0, 0
	counts := map[string]int{}
	for _, c := range s.Records() {
		errs += len(c.Errors)
		trials += c.Trials
		bad += c.WithAnomalies
		invalid += c.Invalid
		unpromised += c.Unpromised
		retried += c.Retried
		for k, v := range c.Counts {
			counts[k] += v
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "faults: %d trials, %d with anomalies, %d invalid, %d harness errors", trials, bad, invalid, errs)
	for _, k := range check.Kinds {
		if k == check.Duplicate && retried > 0 {
			fmt.Fprintf(&b, "; %s %d (%d retried)", k, counts[k]+retried, retried)
			continue
		}
		fmt.Fprintf(&b, "; %s %d", k, counts[k])
	}
	fmt.Fprintf(&b, "; not promised %d", unpromised)
	return b.String()
}
