package experiments

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/results"
)

// Options are the command line's choices besides Config.
type Options struct {
	// ReportOnly regenerates the figures and report.md from Out/runs.json.
	ReportOnly bool
	// Verbose logs every run to standard error.
	Verbose bool
	// Quiet hides the progress (a bar on a terminal, a line per step elsewhere).
	Quiet bool
}

// flagOutput receives --help's usage text.
var flagOutput io.Writer = os.Stderr

// ParseFlags turns kafka-experiments' command line into a Config. --help returns
// pflag.ErrHelp after printing the usage to the flag set's output.
func ParseFlags(args []string) (Config, Options, error) {
	fs := pflag.NewFlagSet("kafka-experiments", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(flagOutput)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: kafka-experiments [--quick | --paper | --full] [--systems=kafka,activemq,rabbitmq] [--out=DIR] [--testbed=loopback|paper] [--runtime=process|container] [flags]\n\n"+
			"Reruns the NetDB'11 paper's Section 5 (producer, consumer and storage tests) against real\n"+
			"ActiveMQ and RabbitMQ, plus one ablation per design decision, and writes runs.csv, runs.json,\n"+
			"PNG figures and report.md to --out.\n\n%s", fs.FlagUsages())
	}
	quick := fs.Bool("quick", false, "about 5 minutes on a 2-core machine (the default)")
	paper := fs.Bool("paper", false, "the paper's comparison at its run length: Kafka 10 million messages per run, the peers the same capped at 30 s per run, no ablations; about 15 minutes")
	full := fs.Bool("full", false, "the paper's 10 million messages per test, ablations included (hours for the peers)")
	q := DefaultConfig(Quick)
	systems := fs.String("systems", joinNames(q.Systems), "systems to compare: kafka, activemq, rabbitmq")
	ablations := fs.String("ablations", joinNames(q.Ablations), "Kafka ablations to run ("+strings.ReplaceAll(joinNames(AllAblations), ",", ", ")+"), or none; replication only when named (it needs ZooKeeper)")
	out := fs.String("out", q.Out, "directory for runs.csv, runs.json, figures, report.md and logs")
	testbed := fs.String("testbed", q.Testbed, "loopback: everything on this machine; paper: broker and client hosts joined by a 1 Gbit link (scripts/testbed.sh, root)")
	runtime := fs.String("runtime", q.Runtime, "process: the servers run as plain processes; container: each in its own Docker container (scripts/containers.sh), clients outside")
	cpus := fs.String("container-cpus", q.ContainerCPUs, "with --runtime=container: every container's CPU limit (docker run --cpus)")
	memory := fs.String("container-memory", q.ContainerMemory, "with --runtime=container: every container's memory limit (docker run --memory, no swap)")
	binDir := fs.String("bin-dir", "", "directory of kafka-server, the perf tools and rabbitmq-perf-test (default: this program's directory)")
	repoDir := fs.String("repo-dir", "", "repository root holding scripts/ (default: found from the working directory)")
	workDir := fs.String("work-dir", "", "where brokers keep their data during the run (default: a temporary directory)")
	keep := fs.Bool("keep-data", false, "keep --work-dir after the run")
	repeats := fs.Int("repeats", q.Repeats, "runs of each configuration (the report wants at least 3)")
	mainRepeats := fs.Int("main-repeats", 0, "runs of each configuration of the paper's comparison (default: quick 5, paper 3, full 3; --repeats alone sets both)")
	kafkaMsgs := fs.Int64("kafka-messages", 0, "messages of Kafka's batch-50 producer and consumer runs (default by mode)")
	kafka1Msgs := fs.Int64("kafka-batch1-messages", 0, "messages of Kafka's batch-1 producer run (default by mode)")
	peerMsgs := fs.Int64("peer-messages", 0, "messages of the peers' producer runs (default by mode)")
	peerCap := fs.Duration("peer-time-cap", 0, "cap on each peer run, e.g. 8s; 0 for none (default: quick 5s, full none)")
	ablMsgs := fs.Int64("ablation-messages", 0, "messages of most ablation runs (default by mode)")
	flush := fs.String("flush-intervals", "", "log.flush.interval sweep, e.g. 1,100,10000 (flush ablation)")
	batches := fs.String("batch-sizes", "", "producer batch size sweep, e.g. 1,10,50,1000 (batch ablation)")
	codecs := fs.String("codecs", "", "compression sweep: none,gzip,snappy (compression ablation)")
	parts := fs.String("partitions", "", "partition count sweep, e.g. 1,2,4,8 (partitions ablation)")
	growth := fs.String("growth-sizes", "", "log sizes for the growth ablation, e.g. 100MiB,10GiB")
	brokers := fs.String("brokers", "", "scale-out: broker host counts, e.g. 1,2,3 or 1..3, or none (default with --testbed=paper: 1,2,3; needs --testbed=paper)")
	zk := fs.String("zookeeper", q.ZooKeeper, "ZooKeeper host:port for the replication part's brokers (each run under a chroot of its own)")
	replSecs := fs.Float64("replication-seconds", 0, "how long each run of the replication part produces (default by mode: quick 5, full 20)")
	dirty := fs.String("dirty-bytes", "", "root: for the run, set vm.dirty_bytes to SIZE (e.g. 256MiB) and vm.dirty_background_bytes to a quarter of it, so that the page cache absorbs as little as a small machine's and a --paper producer run is mostly its sustained phase; the previous settings are restored at the end")
	pipeline := fs.Bool("pipeline", false, "run only paper §4's two-datacenter pipeline (producers, live cluster, kafka-mirror, analysis cluster, consumer; the audit; the mirror SIGKILLed midway) on the emulated testbed (root; without it, on loopback)")
	pipelinePhase := fs.Duration("pipeline-phase", 60*time.Second, "with --pipeline: how long each of its two phases sends")
	var opt Options
	fs.BoolVar(&opt.ReportOnly, "report-only", false, "only redraw the figures and report.md from --out/runs.json")
	fs.BoolVar(&opt.Verbose, "verbose", false, "log every run to standard error")
	fs.BoolVar(&opt.Quiet, "quiet", false, "no progress (a bar on a terminal, one line per step in a log)")
	if err := fs.Parse(args); err != nil {
		return Config{}, opt, err
	}
	if fs.NArg() > 0 {
		return Config{}, opt, fmt.Errorf("experiments: unexpected arguments %q", fs.Args())
	}
	if n := btoi(*quick) + btoi(*paper) + btoi(*full); n > 1 {
		return Config{}, opt, errors.New("experiments: --quick, --paper and --full exclude each other")
	}
	mode := Quick
	switch {
	case *full:
		mode = Full
	case *paper:
		mode = PaperRun
	}
	cfg := DefaultConfig(mode)
	var errs []error
	cfg.Systems = splitNames[results.System](*systems)
	if mode != PaperRun || fs.Changed("ablations") {
		cfg.Ablations = splitNames[results.Experiment](*ablations)
	}
	if len(cfg.Ablations) == 1 && cfg.Ablations[0] == "none" {
		cfg.Ablations = nil
	}
	cfg.Out, cfg.Testbed, cfg.WorkDir, cfg.KeepData = *out, *testbed, *workDir, *keep
	switch {
	case fs.Changed("main-repeats"):
		cfg.MainRepeats = *mainRepeats
		if fs.Changed("repeats") {
			cfg.Repeats = *repeats
		}
	case fs.Changed("repeats"):
		cfg.Repeats, cfg.MainRepeats = *repeats, *repeats
	}
	cfg.Runtime, cfg.ContainerCPUs, cfg.ContainerMemory = *runtime, *cpus, *memory
	setInt64 := func(dst *int64, v int64, name string) {
		if fs.Changed(name) {
			*dst = v
		}
	}
	setInt64(&cfg.KafkaMessages, *kafkaMsgs, "kafka-messages")
	setInt64(&cfg.KafkaBatch1Messages, *kafka1Msgs, "kafka-batch1-messages")
	setInt64(&cfg.PeerMessages, *peerMsgs, "peer-messages")
	setInt64(&cfg.AblationMessages, *ablMsgs, "ablation-messages")
	if fs.Changed("peer-time-cap") {
		cfg.PeerTimeCap = *peerCap
	}
	ints := func(dst *[]int, s, name string) {
		if !fs.Changed(name) {
			return
		}
		v, err := parseInts(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("experiments: --%s: %w", name, err))
		}
		*dst = v
	}
	ints(&cfg.FlushIntervals, *flush, "flush-intervals")
	ints(&cfg.BatchSizes, *batches, "batch-sizes")
	ints(&cfg.PartitionCounts, *parts, "partitions")
	if fs.Changed("codecs") {
		cfg.Codecs = splitList(*codecs)
	}
	if fs.Changed("growth-sizes") {
		cfg.GrowthSizes = nil
		for _, s := range splitList(*growth) {
			n, err := ParseSize(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("experiments: --growth-sizes: %w", err))
			}
			cfg.GrowthSizes = append(cfg.GrowthSizes, n)
		}
	}
	switch {
	case fs.Changed("brokers"):
		v, err := parseCounts(*brokers)
		if err != nil {
			errs = append(errs, fmt.Errorf("experiments: --brokers: %w", err))
		}
		cfg.ScaleOutBrokers = v
	case cfg.Testbed == kit.Paper:
		cfg.ScaleOutBrokers = []int{1, 2, 3}
	}
	cfg.ZooKeeper = *zk
	if fs.Changed("replication-seconds") {
		cfg.ReplicationSeconds = *replSecs
	}
	if fs.Changed("dirty-bytes") {
		n, err := ParseSize(*dirty)
		if err != nil {
			errs = append(errs, fmt.Errorf("experiments: --dirty-bytes: %w", err))
		}
		cfg.DirtyBytes = n
	}
	cfg.Pipeline, cfg.PipelinePhase = *pipeline, *pipelinePhase
	cfg.BinDir = *binDir
	if cfg.BinDir == "" {
		if exe, err := os.Executable(); err == nil {
			cfg.BinDir = filepath.Dir(exe)
		}
	}
	cfg.RepoDir = *repoDir
	if cfg.RepoDir == "" {
		cfg.RepoDir = findRepo()
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, opt, err
	}
	if opt.ReportOnly {
		return cfg, opt, nil
	}
	return cfg, opt, cfg.Validate()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// splitNames splits a comma-separated list of names.
func splitNames[T ~string](s string) []T {
	var out []T
	for _, f := range splitList(s) {
		out = append(out, T(f))
	}
	return out
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseCounts parses a list of counts: "1,2,3", a range "1..3", or "none".
func parseCounts(s string) ([]int, error) {
	if strings.TrimSpace(s) == "none" {
		return nil, nil
	}
	if lo, hi, ok := strings.Cut(s, ".."); ok {
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b, err2 := strconv.Atoi(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil || a > b || b-a > 100 {
			return nil, fmt.Errorf("%q is not a range like 1..3", s)
		}
		var out []int
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
		return out, nil
	}
	return parseInts(s)
}

// ParseSize parses a byte count with an optional unit: B, KB/KiB, MB/MiB, GB/GiB
// (both spellings binary, as log sizes are), e.g. "100MiB", "10GB", "4096".
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"TB", 1 << 40}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n < 0 || n*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("%q is not a size like 100MiB or 10GiB", s)
	}
	return int64(n * float64(mult)), nil
}

// findRepo walks up from the working directory to the directory holding
// scripts/peers.sh; it falls back to ".".
func findRepo() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "scripts", "peers.sh")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "."
		}
		dir = parent
	}
}
