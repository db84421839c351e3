package experiments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/netdb11/kafka/experiments/activemqperf"
	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/machine"
	"github.com/netdb11/kafka/experiments/report"
	"github.com/netdb11/kafka/experiments/results"
)

// lab is where the parts' steps run: the configuration, the testbed and the
// runtime that starts the systems on it, the directories, the machine's
// description, and the record of runs that measure adds to. What a part's
// steps share (its brokers and peers, what its producers wrote) is not here:
// the part hands it from step to step in typed values (broker, topicLog,
// peer).
type lab struct {
	cfg     Config
	log     *slog.Logger
	tb      *kit.Testbed
	rt      kit.Runtime
	work    string // the systems' data
	logs    string // every process's output, under Out
	machine machine.Machine
	rec     *record
	// cleanups stop whatever is still running when Run returns.
	cleanups kit.Cleanups
	// profiling caches, per perf tool, whether it writes CPU profiles
	// (profileArgs).
	profiling map[string]bool
	// compileJMS builds the ActiveMQ driver (activemqperf.Compile, or a
	// test's stand-in).
	compileJMS func(ctx context.Context, dir string) (*activemqperf.Driver, error)
}

// newLab makes the lab's directories: logs under cfg.Out, and the work
// directory (a temporary one unless cfg.WorkDir). Its testbed and record are
// set by Run.
func newLab(cfg Config) (*lab, error) {
	l := &lab{cfg: cfg, log: cfg.logger(), compileJMS: activemqperf.Compile}
	var err error
	if l.cfg.Out, err = filepath.Abs(cfg.Out); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	if l.cfg.RepoDir, err = filepath.Abs(cfg.RepoDir); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	if l.cfg.BinDir, err = filepath.Abs(cfg.BinDir); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	if err := l.checkBinaries(); err != nil {
		return nil, err
	}
	l.logs = filepath.Join(l.cfg.Out, "logs")
	if err := os.MkdirAll(l.logs, 0o755); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	if cfg.WorkDir == "" {
		if l.work, err = os.MkdirTemp("", "kafka-experiments-"); err != nil {
			return nil, fmt.Errorf("experiments: %w", err)
		}
	} else if l.work, err = filepath.Abs(cfg.WorkDir); err == nil {
		err = os.MkdirAll(l.work, 0o755)
	}
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	l.cfg.WorkDir = l.work
	if l.cfg.Runtime == ContainerRuntime {
		l.rt = kit.NewContainers(kit.ContainerOptions{RepoDir: l.cfg.RepoDir, CPUs: l.cfg.ContainerCPUs, Memory: l.cfg.ContainerMemory,
			Systems: l.cfg.Systems, Log: l.log, Logs: l.logs, Cleanups: &l.cleanups})
	} else {
		l.rt = kit.Processes{RepoDir: l.cfg.RepoDir}
	}
	return l, nil
}

// removeWork removes the work directory unless the configuration keeps it.
func (l *lab) removeWork() {
	if l.cfg.KeepData {
		return
	}
	if err := os.RemoveAll(l.work); err != nil {
		l.log.Warn("removing work directory", "dir", l.work, "err", err)
	}
}

// checkBinaries fails early, with the command that fixes it, when a binary the
// selected parts need is missing.
func (l *lab) checkBinaries() error {
	var need []string
	if l.cfg.hasSystem(results.Kafka) {
		need = append(need, kafkaServerBin, kafkaProducerBin, kafkaConsumerBin)
	}
	for _, p := range parts {
		if p.binaries != nil && l.cfg.selects(p) {
			need = append(need, p.binaries(l.cfg)...)
		}
	}
	var missing []string
	for _, b := range need {
		if _, err := os.Stat(l.bin(b)); err != nil {
			missing = append(missing, l.bin(b))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("experiments: missing %s (run `make build`, or pass --bin-dir)", strings.Join(missing, ", "))
	}
	return nil
}

func (l *lab) bin(name string) string { return filepath.Join(l.cfg.BinDir, name) }

// logPath is where the output of a run's driver goes.
func (l *lab) logPath(id string) string {
	return filepath.Join(l.logs, kit.SafeName(id)+".log")
}

// measure runs fn for a new run and records it, with its error if it failed.
func (l *lab) measure(ctx context.Context, run results.Run, fn func(*results.Run) error) error {
	run.Started = time.Now().UTC()
	run.Runtime = l.cfg.Runtime
	run.Conditions = &results.Conditions{LoadAverage: machine.LoadAverage(), DirtyBytes: machine.DirtyBytes()}
	rec, _ := l.rt.(kit.RunRecorder)
	if rec != nil {
		rec.BeginRun(run.System)
	}
	// The driver's linkWatch (watchLink) fills the link's fields.
	err := fn(&run)
	if rec != nil {
		rec.EndRun(&run)
	}
	run.LinkUtilisationTimed = kit.TimedUtilisation(run, l.tb.LinkBitsPerSec)
	if err != nil {
		run.Error = err.Error()
	} else if run.Result.Messages == 0 {
		err = fmt.Errorf("experiments: %s moved no messages", run.ID)
		run.Error = err.Error()
	}
	l.rec.add(run)
	l.log.Info("run", "id", run.ID, "msgs_per_sec", int64(run.Result.MsgsPerSec), "err", run.Error)
	return err
}

// writeReport stores the results, the figures and the report; failed are the
// systems whose remaining steps were skipped, with why.
func (l *lab) writeReport(failed map[results.System]error) error {
	if err := l.rec.write(); err != nil {
		return err
	}
	if l.cfg.Pipeline {
		return writePipelineReport(l.cfg.Out, l.rec.set)
	}
	return report.Write(l.cfg.Out, l.rec.set, report.Context{
		Machine:        l.machine,
		LimitsAfter:    l.rec.set.LimitsAfter,
		Testbed:        l.tb.Description,
		TestbedKind:    l.tb.Kind,
		LinkBitsPerSec: l.tb.LinkBitsPerSec,
		Settings:       l.settings(),
		Mode:           l.cfg.Mode,
		Failures:       failures(failed, l.rec.set),
	}, sections())
}

// settings lists what departs from Kafka 0.7's defaults, with the reason.
func (l *lab) settings() []string {
	if _, tuned := l.socketTuning(); len(tuned) > 0 {
		return []string{autotunedSockets}
	}
	return nil
}

// failures lists, sorted, the systems that stopped and the runs that failed.
func failures(failed map[results.System]error, set *results.Set) []string {
	var out []string
	for sys, err := range failed {
		out = append(out, string(sys)+": "+err.Error())
	}
	for _, r := range set.Runs {
		if r.Error != "" {
			out = append(out, r.ID+": "+r.Error)
		}
	}
	sort.Strings(out)
	return out
}

// record is the result set of one invocation, kept on disk as runs.json and
// runs.csv under dir.
type record struct {
	set *results.Set
	dir string
}

func (r *record) add(run results.Run) { r.set.Runs = append(r.set.Runs, run) }

// write stores the set as it is now.
func (r *record) write() error {
	return errors.Join(
		r.set.WriteJSON(filepath.Join(r.dir, "runs.json")),
		r.set.WriteCSV(filepath.Join(r.dir, "runs.csv")),
	)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// newRun is the record of repetition rep of the configuration k.
func newRun(k results.Key, param float64, rep int) results.Run {
	return results.Run{ID: k.ID(rep), Key: k, Param: param, Rep: rep}
}
