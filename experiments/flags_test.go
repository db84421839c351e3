package experiments

import (
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/results"
)

func TestParseFlagsDefaults(t *testing.T) {
	cfg, opt, err := ParseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig(Quick)
	if cfg.Mode != Quick || !reflect.DeepEqual(cfg.Systems, AllSystems) || !reflect.DeepEqual(cfg.Ablations, DefaultAblations) ||
		cfg.Out != want.Out || cfg.Testbed != kit.Loopback || cfg.Repeats != 3 || cfg.KafkaMessages != want.KafkaMessages ||
		cfg.PeerTimeCap != 5*time.Second || cfg.Runtime != ProcessRuntime {
		t.Errorf("defaults = %+v", cfg)
	}
	if opt.ReportOnly || opt.Quiet || opt.Verbose {
		t.Errorf("options = %+v", opt)
	}
	if cfg.BinDir == "" || cfg.RepoDir == "" {
		t.Errorf("bin %q, repo %q: want defaults", cfg.BinDir, cfg.RepoDir)
	}
}

func TestParseFlagsOverrides(t *testing.T) {
	cfg, opt, err := ParseFlags([]string{
		"--full", "--systems=kafka,rabbitmq", "--ablations=batch,growth", "--out=/tmp/x", "--testbed=paper",
		"--repeats=5", "--kafka-messages=123", "--peer-messages=45", "--peer-time-cap=0", "--batch-sizes=1,7",
		"--flush-intervals=10", "--codecs=gzip", "--partitions=3", "--growth-sizes=100MiB,2GB", "--quiet", "--bin-dir=/b",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != Full || !reflect.DeepEqual(cfg.Systems, []results.System{"kafka", "rabbitmq"}) ||
		!reflect.DeepEqual(cfg.Ablations, []results.Experiment{"batch", "growth"}) || cfg.Out != "/tmp/x" || cfg.Testbed != kit.Paper ||
		cfg.Repeats != 5 || cfg.KafkaMessages != 123 || cfg.PeerMessages != 45 || cfg.PeerTimeCap != 0 ||
		!reflect.DeepEqual(cfg.BatchSizes, []int{1, 7}) || !reflect.DeepEqual(cfg.FlushIntervals, []int{10}) ||
		!reflect.DeepEqual(cfg.Codecs, []string{"gzip"}) || !reflect.DeepEqual(cfg.PartitionCounts, []int{3}) ||
		!reflect.DeepEqual(cfg.GrowthSizes, []int64{100 << 20, 2 << 30}) || cfg.BinDir != "/b" || !opt.Quiet {
		t.Errorf("overrides not applied: %+v", cfg)
	}
	// Untouched sizes come from the --full mode.
	if cfg.KafkaBatch1Messages != 10_000_000 {
		t.Errorf("batch-1 messages %d, want the full mode's 10,000,000", cfg.KafkaBatch1Messages)
	}
	ctr, _, err := ParseFlags([]string{"--runtime=container", "--container-cpus=1.5", "--container-memory=3g"})
	if err != nil || ctr.Runtime != ContainerRuntime || ctr.ContainerCPUs != "1.5" || ctr.ContainerMemory != "3g" {
		t.Errorf("--runtime=container --container-cpus=1.5 --container-memory=3g gave %q %q %q, %v",
			ctr.Runtime, ctr.ContainerCPUs, ctr.ContainerMemory, err)
	}
	none, _, err := ParseFlags([]string{"--ablations=none"})
	if err != nil || len(none.Ablations) != 0 {
		t.Errorf("--ablations=none gave %v, %v", none.Ablations, err)
	}
}

func TestParseFlagsErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--quick", "--full"}, "exclude each other"},
		{[]string{"--systems=kafka,mqseries"}, `unknown system "mqseries"`},
		{[]string{"--systems="}, "no systems selected"},
		{[]string{"--ablations=sendfile,magic"}, `unknown ablation "magic"`},
		{[]string{"--testbed=cloud"}, `testbed "cloud"`},
		{[]string{"--repeats=0"}, "repeats = 0"},
		{[]string{"--batch-sizes=1,x"}, `--batch-sizes: "x" is not an integer`},
		{[]string{"--batch-sizes=0"}, "batch size 0"},
		{[]string{"--codecs=lz4"}, `codec "lz4"`},
		{[]string{"--growth-sizes=10XB"}, `"10XB" is not a size`},
		{[]string{"--peer-time-cap=-1s"}, "peer time cap -1s"},
		{[]string{"--kafka-messages=0"}, "kafka messages = 0"},
		{[]string{"stray"}, "unexpected arguments"},
		{[]string{"--no-such-flag"}, "unknown flag"},
		{[]string{"--brokers=1,2"}, "needs --testbed=paper"},
		{[]string{"--testbed=paper", "--brokers=0,12"}, "scale-out broker count 0"},
		{[]string{"--testbed=paper", "--brokers=3..1"}, `"3..1" is not a range`},
		{[]string{"--testbed=paper", "--brokers=1..x"}, `"1..x" is not a range`},
		{[]string{"--runtime=vm"}, `runtime "vm", want process or container`},
		{[]string{"--runtime=container", "--testbed=paper"}, "container runtime runs on loopback only"},
		{[]string{"--runtime=container", "--container-cpus=0"}, `container CPUs "0"`},
		{[]string{"--runtime=container", "--container-memory=64m"}, `container memory "64m"`},
	}
	for _, tt := range tests {
		_, _, err := ParseFlags(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseFlags(%q) = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}

func TestParseFlagsHelp(t *testing.T) {
	// --help prints usage to stderr and reports pflag.ErrHelp.
	_, _, err := parseFlagsQuiet([]string{"--help"})
	if !errors.Is(err, pflag.ErrHelp) {
		t.Errorf("--help gave %v, want pflag.ErrHelp", err)
	}
}

func parseFlagsQuiet(args []string) (Config, Options, error) {
	saved := flagOutput
	flagOutput = io.Discard
	defer func() { flagOutput = saved }()
	return ParseFlags(args)
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"4096", 4096},
		{"100MiB", 100 << 20},
		{"100MB", 100 << 20},
		{"10GiB", 10 << 30},
		{"1.5G", 3 << 29},
		{"2k", 2048},
		{" 7 B ", 7},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "MiB", "-1MiB", "ten", "1e30GiB"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) succeeded", bad)
		}
	}
}

func TestValidateCollectsEveryError(t *testing.T) {
	c := DefaultConfig(Quick)
	c.MessageSize = 0
	c.Prefetch = 0
	c.PartitionCounts = []int{0}
	err := c.Validate()
	for _, want := range []string{"message size 0", "prefetch 0", "partition count 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to mention %q", err, want)
		}
	}
	if err := DefaultConfig(Full).Validate(); err != nil {
		t.Errorf("full config invalid: %v", err)
	}
}

func TestFetchSizeIsAboutThousandMessages(t *testing.T) {
	c := DefaultConfig(Quick)
	// Paper: ~1000 messages, ~200 KB per pull.
	if got := c.fetchSize(); got != 1000*209 {
		t.Errorf("fetch size %d, want 209000", got)
	}
}

// The scale-out runs by default on the paper testbed only, and --brokers takes
// a list, a range or none.
func TestParseFlagsBrokers(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []int
	}{
		{nil, nil},
		{[]string{"--testbed=paper"}, []int{1, 2, 3}},
		{[]string{"--testbed=paper", "--brokers=1..4"}, []int{1, 2, 3, 4}},
		{[]string{"--testbed=paper", "--brokers=2,3"}, []int{2, 3}},
		{[]string{"--testbed=paper", "--brokers=none"}, nil},
		{[]string{"--brokers=none"}, nil},
	} {
		cfg, _, err := ParseFlags(tc.args)
		if err != nil {
			t.Errorf("ParseFlags(%q): %v", tc.args, err)
			continue
		}
		if !reflect.DeepEqual(cfg.ScaleOutBrokers, tc.want) {
			t.Errorf("ParseFlags(%q): brokers %v, want %v", tc.args, cfg.ScaleOutBrokers, tc.want)
		}
	}
}

// TestParseFlagsPaper: --paper runs the paper's comparison at its length
// (issue 14): 10 million messages for Kafka, the peers the same with a
// stated cap, no ablations unless named.
func TestParseFlagsPaper(t *testing.T) {
	cfg, _, err := ParseFlags([]string{"--paper"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != PaperRun || cfg.KafkaMessages != 10_000_000 || cfg.KafkaBatch1Messages != 10_000_000 ||
		cfg.PeerMessages != 10_000_000 || cfg.PeerTimeCap != paperPeerTimeCap || len(cfg.Ablations) != 0 || cfg.mainRepeats() != 3 {
		t.Errorf("--paper = %+v", cfg)
	}
	withAbl, _, err := ParseFlags([]string{"--paper", "--ablations=batch"})
	if err != nil || !reflect.DeepEqual(withAbl.Ablations, []results.Experiment{"batch"}) || withAbl.BatchSizes == nil {
		t.Errorf("--paper --ablations=batch = %v, %v", withAbl.Ablations, err)
	}
	if _, _, err := ParseFlags([]string{"--paper", "--quick"}); err == nil {
		t.Error("--paper --quick accepted")
	}
	quick, _, err := ParseFlags([]string{"--quick"})
	if err != nil || quick.mainRepeats() != 5 || quick.Repeats != 3 {
		t.Errorf("--quick: main repeats %d, repeats %d, %v; want 5 and 3", quick.mainRepeats(), quick.Repeats, err)
	}
	one, _, err := ParseFlags([]string{"--repeats=1"})
	if err != nil || one.mainRepeats() != 1 || one.Repeats != 1 {
		t.Errorf("--repeats=1: main repeats %d, repeats %d, %v; want 1 and 1", one.mainRepeats(), one.Repeats, err)
	}
	mixed, _, err := ParseFlags([]string{"--repeats=2", "--main-repeats=7"})
	if err != nil || mixed.mainRepeats() != 7 || mixed.Repeats != 2 {
		t.Errorf("--repeats=2 --main-repeats=7: %d, %d, %v", mixed.mainRepeats(), mixed.Repeats, err)
	}
}

// --dirty-bytes takes a size, refuses nonsense and tiny values, and needs
// root (issue 14's sustained phase).
func TestParseFlagsDirtyBytes(t *testing.T) {
	for _, bad := range []string{"--dirty-bytes=lots", "--dirty-bytes=1MiB", "--dirty-bytes=-5"} {
		if _, _, err := ParseFlags([]string{bad}); err == nil || !strings.Contains(err.Error(), "dirty") {
			t.Errorf("%s: %v, want an error about dirty bytes", bad, err)
		}
	}
	cfg, _, err := ParseFlags([]string{"--paper", "--dirty-bytes=256MiB"})
	if os.Geteuid() != 0 {
		if err == nil || !strings.Contains(err.Error(), "root") {
			t.Fatalf("--dirty-bytes as a user: %v, want an error saying it needs root", err)
		}
		return
	}
	if err != nil || cfg.DirtyBytes != 256<<20 {
		t.Fatalf("--dirty-bytes=256MiB: %d, %v", cfg.DirtyBytes, err)
	}
	if cfg, _, _ := ParseFlags(nil); cfg.DirtyBytes != 0 {
		t.Errorf("default dirty bytes %d, want 0 (the machine's own settings)", cfg.DirtyBytes)
	}
}
