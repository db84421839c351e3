package experiments

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/zkcoord/zktest"
)

// TestIntegrationReplication runs the replication part end to end: three
// real kafka-server processes on a real ZooKeeper (a chroot of the test's),
// topics made with kafka-topics, kafka-e2e-latency for every configuration;
// then checks the runs, the latencies, the per-broker CPU and the report.
func TestIntegrationReplication(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three brokers and the tools")
	}
	cfg := DefaultConfig(Quick)
	cfg.Systems = []results.System{results.Kafka}
	cfg.Ablations = []results.Experiment{replicationExp}
	cfg.ZooKeeper = zktest.Start(t)
	cfg.Out = t.TempDir()
	cfg.RepoDir = repoRoot(t)
	cfg.BinDir = buildTools(t, "./broker/cmd/kafka-server", "./producer/cmd/kafka-producer-perf-test",
		"./consumer/cmd/kafka-consumer-perf-test", "./broker/cmd/kafka-topics", "./experiments/cmd/kafka-e2e-latency")
	cfg.Repeats = 1
	cfg.KafkaMessages, cfg.KafkaBatch1Messages = 5_000, 1_000
	cfg.DiskTestBytes, cfg.LoopbackTestBytes = 8<<20, 64<<20
	cfg.ReplicationSeconds = 0.5
	set, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, conf := range replConfs {
		for _, conns := range replicationConnections {
			tput := replThroughput(set, conf, conns)
			if len(tput) != 1 || tput[0].Result.MsgsPerSec <= 0 || tput[0].BrokerCPUSeconds <= 0 {
				t.Errorf("%v, %d connections: throughput runs %+v", conf, conns, tput)
			}
			if len(tput) == 1 && !strings.Contains(tput[0].Config["broker_cpu"], "(leader)") {
				t.Errorf("%v: per-broker CPU %q names no leader", conf, tput[0].Config["broker_cpu"])
			}
		}
		for _, rate := range replicationRates {
			rs := replLatency(set, conf, rate)
			if len(rs) != 1 {
				t.Errorf("%v at %d msg/s: %d runs", conf, rate, len(rs))
				continue
			}
			r := rs[0]
			if r.EndToEndLatency == nil || r.AckLatency == nil || int64(r.EndToEndLatency.N) != r.Result.Messages || r.EndToEndLatency.P50 <= 0 {
				t.Errorf("%v at %d msg/s: %d messages, latencies %+v / %+v", conf, rate, r.Result.Messages, r.AckLatency, r.EndToEndLatency)
			}
		}
	}
	for _, r := range set.Runs {
		if r.Error != "" {
			t.Errorf("run %s failed: %s", r.ID, r.Error)
		}
	}
	md, err := os.ReadFile(filepath.Join(cfg.Out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Replication: what three copies cost", "| 32 | RF=3 acks=all |", "three replicas with acks=1 ran at"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, "fig-replication.png")); err != nil {
		t.Error(err)
	}
}

// TestReplicationConfig: the part is opt-in; on loopback it needs a
// ZooKeeper, on the paper testbed it starts its own; containers are refused.
func TestReplicationConfig(t *testing.T) {
	cfg := DefaultConfig(Quick)
	if cfg.selects(replicationPart) {
		t.Error("the replication part runs by default")
	}
	cfg.Ablations = []results.Experiment{replicationExp}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("loopback with --ablations=replication: %v", err)
	}
	cfg.ZooKeeper = ""
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--zookeeper") {
		t.Errorf("no ZooKeeper on loopback: %v", err)
	}
	cfg.Testbed, cfg.ScaleOutBrokers = kit.Paper, nil
	if err := cfg.Validate(); err != nil {
		t.Errorf("paper testbed without --zookeeper: %v", err)
	}
	cfg.Testbed, cfg.ZooKeeper, cfg.Runtime = kit.Loopback, "127.0.0.1:2181", ContainerRuntime
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "processes only") {
		t.Errorf("container runtime: %v", err)
	}
}
