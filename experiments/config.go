package experiments

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/results"
)

// Modes of the experiments.
const (
	// Quick finishes in about ten minutes on a 2-core machine (README.md
	// gives a measured time).
	Quick = "quick"
	// Full uses the paper's 10 million messages.
	Full = "full"
	// PaperRun is the paper's comparison at its run length (paperrun.go).
	PaperRun = "paper"
)

// AllSystems are the systems of the paper's comparison.
var AllSystems = []results.System{results.Kafka, results.ActiveMQ, results.RabbitMQ}

// Config is the configuration of one invocation of the experiments: what is
// written next to the results, and where progress and log go.
type Config struct {
	results.Config

	// Progress receives the plan's progress (usually os.Stderr): a bar
	// redrawn in place when it is a terminal, one line per step otherwise
	// (broker/cli/progress); nil shows none.
	Progress io.Writer `json:"-"`
	// Logger receives the experiments' log; nil discards it.
	Logger *slog.Logger `json:"-"`
}

// DefaultConfig returns the configuration of a mode.
func DefaultConfig(mode string) Config {
	if mode == PaperRun {
		return paperConfig()
	}
	c := Config{Config: results.Config{
		Mode:      mode,
		Systems:   slices.Clone(AllSystems),
		Ablations: slices.Clone(DefaultAblations),
		ZooKeeper: "127.0.0.1:2181",
		Out:       "results/latest",
		Testbed:   kit.Loopback,
		BinDir:    "bin",
		RepoDir:   ".",
		Repeats:   3,
		Runtime:   ProcessRuntime,
		// One core of this 2-core machine for the server, the other for
		// its clients; memory enough for ActiveMQ's 1 GiB heap.
		ContainerCPUs:   "1",
		ContainerMemory: "2g",
		MessageSize:     200,
		TxSize:          50,
		Prefetch:        1000,
		Codecs:          []string{"none", "gzip", "snappy"},

		PeerWarmUpMessages: 20_000,
	}}
	switch mode {
	case Full:
		// Paper §5: 10 million messages.
		c.KafkaBatch1Messages = 10_000_000
		c.KafkaMessages = 10_000_000
		c.PeerMessages = 10_000_000
		c.PeerTxMessages = 1_000_000
		c.AblationMessages = 10_000_000
		c.FlushIntervals = []int{1, 10, 100, 1000, 10000, 100000}
		c.FlushMessages = 1_000_000
		c.BatchSizes = []int{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}
		c.PartitionCounts = []int{1, 2, 3, 4, 5, 6, 7, 8}
		c.GrowthSizes = []int64{100 << 20, 10 << 30}
		c.GrowthProbeMessages = 2_000_000
		c.ReplicationSeconds = 20
	default:
		c.Mode = Quick
		// Every Kafka run of the main figures lasts more than a second, so
		// that the figures' throughput over time shows a course, not a
		// point or two (issue 24): 2 million messages took 0.26-0.8 s at
		// batch 50 and for the consumer (up to 7.7M msg/s hot), 300,000
		// 0.4-0.75 s at batch 1 (400-700k msg/s) on this 2-core machine.
		c.KafkaBatch1Messages = 1_000_000
		c.KafkaMessages = 8_000_000
		c.PeerMessages = 100_000
		c.PeerTxMessages = 20_000
		c.PeerTimeCap = 5 * time.Second
		c.PeerWarmUpMessages = 10_000
		c.AblationMessages = 500_000
		c.FlushIntervals = []int{1, 100, 1000, 10000, 100000}
		c.FlushMessages = 200_000
		c.BatchSizes = []int{1, 10, 50, 200, 1000}
		c.PartitionCounts = []int{1, 2, 4, 8}
		c.GrowthSizes = []int64{100 << 20, 1 << 30}
		// A probe of 300,000 messages lasted 0.12-0.4 s (1 to 4 samples of
		// the log's growth): on 29 November the producer was 42% slower at
		// 1 GiB than at 100 MiB, on 3 December (load average 5-7) it
		// scattered 0.72-1.36M msg/s at 100 MiB and 0.84-2.48M at 1 GiB, the
		// spread within one size larger than the difference between sizes,
		// with at most 35 MB of the page cache unwritten at any probe's
		// start. A million messages keep a probe near a second.
		c.GrowthProbeMessages = 1_000_000
		// Issue 14: five repetitions of the main figures, so that a range
		// has a median worth the name and its extremes can be explained.
		c.MainRepeats = 5
		c.ReplicationSeconds = 5
	}
	return c
}

// minDirtyBytes is the least --dirty-bytes accepted: below a few MiB the
// kernel's writeback would throttle the broker on every flush, which says
// nothing about the disk.
const minDirtyBytes = 4 << 20

// Validate reports the first invalid field with a precise message.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("experiments: "+format, args...)) }
	if c.Mode != Quick && c.Mode != Full && c.Mode != PaperRun {
		bad("mode %q, want quick, paper or full", c.Mode)
	}
	if len(c.Systems) == 0 {
		bad("no systems selected (want some of %s)", joinNames(AllSystems))
	}
	for _, s := range c.Systems {
		if !slices.Contains(AllSystems, s) {
			bad("unknown system %q (want some of %s)", s, joinNames(AllSystems))
		}
	}
	for _, a := range c.Ablations {
		if !slices.Contains(AllAblations, a) {
			bad("unknown ablation %q (want some of %s)", a, joinNames(AllAblations))
		}
	}
	if c.Out == "" {
		bad("out directory is empty")
	}
	switch {
	case c.DirtyBytes < 0:
		bad("dirty bytes %d, want a size like 256MiB", c.DirtyBytes)
	case c.DirtyBytes > 0 && c.DirtyBytes < minDirtyBytes:
		bad("dirty bytes %d, want at least %d (4 MiB)", c.DirtyBytes, minDirtyBytes)
	case c.DirtyBytes > 0 && os.Geteuid() != 0:
		bad("--dirty-bytes sets /proc/sys/vm/dirty_bytes: run as root")
	}
	if c.Testbed != kit.Loopback && c.Testbed != kit.Paper {
		bad("testbed %q, want loopback or paper", c.Testbed)
	}
	if !slices.Contains(Runtimes, c.Runtime) {
		bad("runtime %q, want %s", c.Runtime, strings.Join(Runtimes, " or "))
	}
	if c.Runtime == ContainerRuntime {
		if c.Testbed != kit.Loopback {
			bad("the container runtime runs on loopback only (--testbed=loopback): containers use the host's network")
		}
		if n, err := strconv.ParseFloat(c.ContainerCPUs, 64); err != nil || n <= 0 {
			bad("container CPUs %q, want a positive number like 1 or 1.5", c.ContainerCPUs)
		}
		if n, err := ParseSize(c.ContainerMemory); err != nil || n < 256<<20 {
			bad("container memory %q, want at least 256m (e.g. 2g)", c.ContainerMemory)
		}
	}
	if c.Repeats < 1 {
		bad("repeats = %d, want >= 1 (the report wants >= 3)", c.Repeats)
	}
	if c.MainRepeats < 0 {
		bad("main repeats = %d, want >= 1 (or 0: as repeats)", c.MainRepeats)
	}
	if c.MessageSize < 1 || c.MessageSize > 1_000_000-10 {
		bad("message size %d, want 1..999990 (the broker's max.message.size is 1,000,000)", c.MessageSize)
	}
	for name, v := range map[string]int64{
		"kafka batch-1 messages": c.KafkaBatch1Messages, "kafka messages": c.KafkaMessages,
		"peer messages": c.PeerMessages, "peer transaction messages": c.PeerTxMessages,
		"ablation messages": c.AblationMessages, "flush messages": c.FlushMessages,
		"growth probe messages": c.GrowthProbeMessages,
	} {
		if v < 1 {
			bad("%s = %d, want >= 1", name, v)
		}
	}
	if c.PeerWarmUpMessages < 0 {
		bad("peer warm-up messages = %d, want >= 0", c.PeerWarmUpMessages)
	}
	if c.PeerTimeCap < 0 {
		bad("peer time cap %v, want >= 0", c.PeerTimeCap)
	}
	if c.TxSize < 1 {
		bad("transaction size %d, want >= 1", c.TxSize)
	}
	if c.Prefetch < 1 || c.Prefetch > 65535 {
		bad("prefetch %d, want 1..65535", c.Prefetch)
	}
	for _, v := range c.FlushIntervals {
		if v < 1 {
			bad("flush interval %d, want >= 1", v)
		}
	}
	for _, v := range c.BatchSizes {
		if v < 1 || v > 100_000 {
			bad("batch size %d, want 1..100000", v)
		}
	}
	for _, v := range c.Codecs {
		if codecID(v) < 0 {
			bad("codec %q, want none, gzip or snappy", v)
		}
	}
	for _, v := range c.PartitionCounts {
		if v < 1 || v > 64 {
			bad("partition count %d, want 1..64", v)
		}
	}
	for _, v := range c.GrowthSizes {
		if v < 1<<20 {
			bad("growth size %d bytes, want >= 1 MiB", v)
		}
	}
	for _, v := range c.ScaleOutBrokers {
		if v < 1 || v > 9 {
			bad("scale-out broker count %d, want 1..9", v)
		}
	}
	if slices.Contains(c.Ablations, replicationExp) {
		switch {
		case c.ReplicationSeconds <= 0:
			bad("replication seconds %v, want > 0", c.ReplicationSeconds)
		case c.ZooKeeper == "" && c.Testbed != kit.Paper:
			bad("the replication part needs --zookeeper on loopback")
		case c.Runtime == ContainerRuntime:
			bad("the replication part runs with processes only (--runtime=process)")
		}
	}
	if len(c.ScaleOutBrokers) > 0 && c.Testbed != kit.Paper {
		bad("the scale-out (--brokers) needs --testbed=paper: on loopback every broker shares the same CPUs and no link")
	}
	return errors.Join(errs...)
}

// mainRepeats is how many times the paper's comparison runs each
// configuration.
func (c Config) mainRepeats() int {
	if c.MainRepeats > 0 {
		return c.MainRepeats
	}
	return c.Repeats
}

// hasSystem reports whether a system is selected.
func (c Config) hasSystem(s results.System) bool { return slices.Contains(c.Systems, s) }

// joinNames lists names separated by commas.
func joinNames[T ~string](names []T) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, ",")
}

// fetchSize is Kafka's consumer fetch size: Prefetch messages of MessageSize
// plus their per-message header (paper: ~1000 messages, ~200 KB per pull).
func (c Config) fetchSize() int { return c.Prefetch * (c.MessageSize + kafkaOverhead) }

// codecID maps a codec name to Kafka 0.7's compression.codec number.
func codecID(name string) int {
	switch name {
	case "none":
		return 0
	case "gzip":
		return 1
	case "snappy":
		return 2
	}
	return -1
}

func (c Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// Runtimes: how the systems under test run. The clients (the perf tools and
// the peers' drivers) always run as plain processes on the client host, the
// same binaries in both runtimes, so only the server side changes.
const (
	// ProcessRuntime runs every server as a plain process on this machine.
	ProcessRuntime = "process"
	// ContainerRuntime runs every server in its own Docker container
	// (scripts/containers.sh), with identical CPU and memory limits.
	ContainerRuntime = "container"
)

// Runtimes lists the valid values of Config.Runtime.
var Runtimes = []string{ProcessRuntime, ContainerRuntime}
