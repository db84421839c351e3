package experiments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/netdb11/kafka/experiments/activemqperf"
	"github.com/netdb11/kafka/experiments/machine"
	"github.com/netdb11/kafka/experiments/report"
	"github.com/netdb11/kafka/experiments/results"
)

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9.=-]+`)

// harness is the state of one invocation of Run.
type harness struct {
	cfg     Config
	log     *slog.Logger
	tb      *Testbed
	work    string // brokers' data
	logs    string // every process's output, under Out
	machine machine.Machine
	amq     *activemqperf.Driver
	set     *results.Set
	// failed records, per system, the error that stopped its remaining steps.
	failed map[results.System]error
	// cleanups stop whatever is still running when Run returns (also after an
	// interruption); each is safe to call after the plan stopped it already.
	cleanups []func()
	// containers are the running containers by system (container runtime).
	containers map[results.System]*container

	// peersHook and compileHook, when set by a test, stand in for
	// scripts/peers.sh and activemqperf.Compile.
	peersHook   func(ctx context.Context, env []string, action, name, dir string) (string, error)
	compileHook func(ctx context.Context, dir string) (*activemqperf.Driver, error)
}

// step is one unit of the plan, shown as one tick of the progress bar.
type step struct {
	label  string
	system results.System // a failure of this system skips its later steps
	run    func(ctx context.Context) error
}

// Run performs the experiments described by cfg, writes every run as CSV and JSON
// with the configuration and the machine's description, draws the figures and
// writes report.md, all under cfg.Out. It returns the result set; runs that
// failed are in it with their error, and Run's error joins the failures.
func Run(ctx context.Context, cfg Config) (*results.Set, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h := &harness{cfg: cfg, log: cfg.logger(), failed: map[results.System]error{}, containers: map[results.System]*container{}}
	var err error
	if h.cfg.Out, err = filepath.Abs(cfg.Out); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	if h.cfg.RepoDir, err = filepath.Abs(cfg.RepoDir); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	if h.cfg.BinDir, err = filepath.Abs(cfg.BinDir); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	if err := h.checkBinaries(); err != nil {
		return nil, err
	}
	h.logs = filepath.Join(h.cfg.Out, "logs")
	if err := os.MkdirAll(h.logs, 0o755); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	if cfg.WorkDir == "" {
		if h.work, err = os.MkdirTemp("", "kafka-experiments-"); err != nil {
			return nil, fmt.Errorf("experiments: %w", err)
		}
	} else if h.work, err = filepath.Abs(cfg.WorkDir); err == nil {
		err = os.MkdirAll(h.work, 0o755)
	}
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	h.cfg.WorkDir = h.work
	defer func() {
		if !cfg.KeepData {
			if err := os.RemoveAll(h.work); err != nil {
				h.log.Warn("removing work directory", "dir", h.work, "err", err)
			}
		}
	}()

	h.log.Info("describing the machine", "dir", h.work)
	h.machine = machine.Describe(ctx, machine.Options{Dir: h.work, DiskBytes: cfg.DiskTestBytes, LoopbackBytes: cfg.LoopbackTestBytes})
	h.set = &results.Set{Machine: h.machine, Config: h.cfg.Config, Started: time.Now().UTC()}

	if h.tb, err = StartTestbed(ctx, cfg.Testbed, h.cfg.RepoDir, h.log); err != nil {
		return nil, err
	}
	defer func() {
		if err := h.tb.Close(); err != nil {
			h.log.Error("taking the testbed down", "err", err)
		}
	}()

	defer func() {
		for i := len(h.cleanups) - 1; i >= 0; i-- {
			h.cleanups[i]()
		}
	}()
	h.set.Testbed = h.tb.Description
	if h.cfg.Runtime != ContainerRuntime {
		// Limits that applied to nothing are not recorded.
		h.set.Config.ContainerCPUs, h.set.Config.ContainerMemory = "", ""
	} else {
		if err := h.prepareContainers(ctx); err != nil {
			return nil, err
		}
		h.tb.Description += "; " + h.containersDescription()
		h.set.Testbed = h.tb.Description
	}
	plan := h.plan()
	runErr := h.execute(ctx, plan)
	h.set.Finished = time.Now().UTC()
	return h.set, errors.Join(runErr, h.write())
}

// checkBinaries fails early, with the command that fixes it, when a binary the
// selected systems need is missing.
func (h *harness) checkBinaries() error {
	var need []string
	if h.cfg.hasSystem(results.Kafka) {
		need = append(need, kafkaServerBin, kafkaProducerBin, kafkaConsumerBin)
	}
	if h.cfg.hasSystem(results.Kafka) && h.cfg.hasAblation(results.Compression) {
		need = append(need, payloadDriverBin)
	}
	if h.cfg.hasSystem(results.RabbitMQ) {
		need = append(need, rabbitDriverBin)
	}
	var missing []string
	for _, b := range need {
		if _, err := os.Stat(h.bin(b)); err != nil {
			missing = append(missing, h.bin(b))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("experiments: missing %s (run `make build`, or pass --bin-dir)", strings.Join(missing, ", "))
	}
	return nil
}

func (h *harness) bin(name string) string { return filepath.Join(h.cfg.BinDir, name) }

// logPath is where the output of a run's driver goes.
func (h *harness) logPath(id string) string {
	return filepath.Join(h.logs, unsafeName.ReplaceAllString(id, "_")+".log")
}

// execute runs the plan in order with a progress bar. A failing step of a system
// skips that system's later steps; a failing measurement is recorded and the plan
// goes on.
func (h *harness) execute(ctx context.Context, plan []step) error {
	var bar *progressbar.ProgressBar
	if h.cfg.Progress != nil {
		bar = progressbar.NewOptions(len(plan),
			progressbar.OptionSetWriter(h.cfg.Progress),
			progressbar.OptionSetDescription("experiments"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(h.cfg.Progress) }),
		)
	}
	var errs []error
	for _, s := range plan {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		if bar != nil {
			bar.Describe(fmt.Sprintf("%-58.58s", s.label))
		}
		if ferr := h.failed[s.system]; ferr != nil {
			h.log.Warn("skipped", "step", s.label, "because", ferr)
		} else if err := s.run(ctx); err != nil {
			h.log.Error("step failed", "step", s.label, "err", err)
			errs = append(errs, fmt.Errorf("%s: %w", s.label, err))
		}
		if bar != nil {
			_ = bar.Add(1)
		}
		// Partial results survive an interrupted run.
		if err := h.writeRuns(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// measure runs fn for a new Run and records it, with its error if it failed.
func (h *harness) measure(ctx context.Context, run results.Run, fn func(*results.Run) error) error {
	run.Started = time.Now().UTC()
	run.Runtime = h.cfg.Runtime
	c := h.containers[run.System]
	if c != nil {
		if err := c.cg.resetPeak(); err != nil {
			h.log.Warn("container memory peak", "err", err)
		}
	}
	// The driver's linkWatch (watchLink) fills the link's fields.
	err := fn(&run)
	if c != nil {
		run.Container = c.record()
	}
	run.LinkUtilisationTimed = timedUtilisation(run, h.tb.LinkBitsPerSec)
	if err != nil {
		run.Error = err.Error()
	} else if run.Result.Messages == 0 {
		err = fmt.Errorf("experiments: %s moved no messages", run.ID)
		run.Error = err.Error()
	}
	h.set.Runs = append(h.set.Runs, run)
	h.log.Info("run", "id", run.ID, "msgs_per_sec", int64(run.Result.MsgsPerSec), "err", run.Error)
	return err
}

// fail marks a system as failed: its remaining steps are skipped.
func (h *harness) fail(system results.System, err error) error {
	if err != nil {
		h.failed[system] = err
	}
	return err
}

func (h *harness) writeRuns() error {
	return errors.Join(
		h.set.WriteJSON(filepath.Join(h.cfg.Out, "runs.json")),
		h.set.WriteCSV(filepath.Join(h.cfg.Out, "runs.csv")),
	)
}

// write stores the results, the figures and the report.
func (h *harness) write() error {
	if err := h.writeRuns(); err != nil {
		return err
	}
	return report.Write(h.cfg.Out, h.set, report.Context{
		Machine:        h.machine,
		Testbed:        h.tb.Description,
		TestbedKind:    h.tb.Kind,
		LinkBitsPerSec: h.tb.LinkBitsPerSec,
		Settings:       h.settings(),
		Mode:           h.cfg.Mode,
		Failures:       h.failures(),
	})
}

// settings lists what departs from Kafka 0.7's defaults, with the reason.
func (h *harness) settings() []string {
	if _, tuned := h.socketTuning(); len(tuned) > 0 {
		return []string{autotunedSockets}
	}
	return nil
}

func (h *harness) failures() []string {
	var out []string
	for sys, err := range h.failed {
		out = append(out, string(sys)+": "+err.Error())
	}
	for _, r := range h.set.Runs {
		if r.Error != "" {
			out = append(out, r.ID+": "+r.Error)
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
