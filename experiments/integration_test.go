package experiments

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/experiments/activemqperf"
	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/rabbitperf"
	"github.com/netdb11/kafka/experiments/results"
)

// The integration tests start the real ActiveMQ and RabbitMQ through
// scripts/peers.sh, installing them first through the same script the
// experiments use (a no-op when they are installed). They are skipped with
// -short only: without the packages, and without the root needed to install
// them, they fail.

func requirePeers(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts ActiveMQ and RabbitMQ")
	}
	script := filepath.Join(repoRoot(t), "scripts", "peers.sh")
	for _, name := range []string{"activemq", "rabbitmq"} {
		out, err := exec.Command(script, "install", name, t.TempDir()).CombinedOutput()
		if err != nil {
			t.Fatalf("scripts/peers.sh install %s: %v\n%s", name, err, out)
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir := findRepo()
	if _, err := os.Stat(filepath.Join(dir, "scripts", "peers.sh")); err != nil {
		t.Fatalf("scripts/peers.sh not found above the working directory: %v", err)
	}
	return dir
}

// testPeer is a peer started for one test; it is stopped by t.Cleanup.
type testPeer struct {
	script, name, dir string
	env               []string
	port              int
}

func (p *testPeer) cmd(action string) (string, error) {
	cmd := exec.Command(p.script, action, p.name, p.dir)
	cmd.Env = append(os.Environ(), p.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (p *testPeer) pid(file string) int {
	b, err := os.ReadFile(filepath.Join(p.dir, file))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

func startTestPeer(t *testing.T, name results.System) *testPeer {
	t.Helper()
	l := &lab{tb: &kit.Testbed{Kind: kit.Loopback, Broker: kit.Local("broker"), Client: kit.Local("client")}}
	env, port, err := l.peerEnv(name)
	if err != nil {
		t.Fatal(err)
	}
	p := &testPeer{script: filepath.Join(repoRoot(t), "scripts", "peers.sh"), name: string(name), dir: t.TempDir(), env: env, port: port}
	t.Cleanup(func() {
		if out, err := p.cmd("stop"); err != nil {
			t.Errorf("peers.sh stop %s: %v\n%s", name, err, out)
		}
	})
	if out, err := p.cmd("start"); err != nil {
		t.Fatalf("peers.sh start %s: %v\n%s", name, err, out)
	}
	return p
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// checkLifecycle: start is idempotent, status reports, stop ends the processes
// and is idempotent too.
func checkLifecycle(t *testing.T, p *testPeer, pidFiles ...string) {
	t.Helper()
	pid := p.pid("pid")
	out, err := p.cmd("start")
	if err != nil || p.pid("pid") != pid || !strings.Contains(out, "running pid="+strconv.Itoa(pid)) {
		t.Errorf("second start: %v, pid %d -> %d\n%s", err, pid, p.pid("pid"), out)
	}
	if out, err := p.cmd("status"); err != nil || !strings.Contains(out, "port="+strconv.Itoa(p.port)) {
		t.Errorf("status of a running peer: %v\n%s", err, out)
	}
	var pids []int
	for _, f := range append([]string{"pid"}, pidFiles...) {
		pids = append(pids, p.pid(f))
	}
	if out, err := p.cmd("stop"); err != nil {
		t.Fatalf("stop: %v\n%s", err, out)
	}
	for _, pid := range pids {
		wait.Within(t, 10*time.Second, "the process to exit", func() bool { return !alive(pid) })
	}
	out, err = p.cmd("status")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(out, "stopped") {
		t.Errorf("status of a stopped peer: %v\n%s", err, out)
	}
	if out, err := p.cmd("stop"); err != nil {
		t.Errorf("second stop: %v\n%s", err, out)
	}
	if kit.DialOK(context.Background(), "127.0.0.1", p.port) {
		t.Errorf("port %d still accepts connections after stop", p.port)
	}
}

func TestIntegrationPeers(t *testing.T) {
	requirePeers(t)
	const n = 2000
	t.Run("activemq", func(t *testing.T) {
		t.Parallel()
		p := startTestPeer(t, results.ActiveMQ)
		ctx := context.Background()
		drv, err := activemqperf.Compile(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		runDrv := func(cfg activemqperf.Config) perf.Result {
			t.Helper()
			cfg.URL, cfg.Queue, cfg.MessageSize, cfg.Prefetch = fmt.Sprintf("tcp://127.0.0.1:%d", p.port), "it", 200, 1000
			argv, err := drv.Args(cfg)
			if err != nil {
				t.Fatal(err)
			}
			res, err := kit.DriverRun{Host: kit.Local("client"), Argv: argv, LogPath: filepath.Join(t.TempDir(), "drv.log")}.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		if got := runDrv(activemqperf.Config{Mode: "produce", Messages: n}); got.Messages != n || len(got.Samples) == 0 {
			t.Errorf("produced %d messages (%d samples), want %d", got.Messages, len(got.Samples), n)
		}
		if got := runDrv(activemqperf.Config{Mode: "produce", Messages: 500, TxSize: 50}); got.Messages != 500 {
			t.Errorf("produced %d messages in transactions, want 500", got.Messages)
		}
		// Everything sent arrives, in a consumer with a time cap well above need.
		if got := runDrv(activemqperf.Config{Mode: "consume", Messages: n + 500, Duration: time.Minute}); got.Messages != n+500 || got.Bytes != (n+500)*200 {
			t.Errorf("consumed %d messages, %d bytes; want %d, %d", got.Messages, got.Bytes, n+500, (n+500)*200)
		}
		checkLifecycle(t, p)
	})
	t.Run("rabbitmq", func(t *testing.T) {
		t.Parallel()
		p := startTestPeer(t, results.RabbitMQ)
		ctx := context.Background()
		cfg := rabbitperf.DefaultConfig()
		cfg.URL, cfg.Queue, cfg.Messages = fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", p.port), "it", n
		if err := rabbitperf.Reset(cfg); err != nil {
			t.Fatal(err)
		}
		if got, err := rabbitperf.Produce(ctx, cfg); err != nil || got.Messages != n {
			t.Fatalf("Produce = %+v, %v", got, err)
		}
		tx := cfg
		tx.Messages, tx.TxSize = 500, 50
		if got, err := rabbitperf.Produce(ctx, tx); err != nil || got.Messages != 500 {
			t.Fatalf("Produce in transactions = %+v, %v", got, err)
		}
		if depth, err := rabbitperf.Depth(cfg); err != nil || depth != n+500 {
			t.Errorf("queue depth %d, %v; want %d", depth, err, n+500)
		}
		cfg.Messages, cfg.Duration = n+500, time.Minute
		if got, err := rabbitperf.Consume(ctx, cfg); err != nil || got.Messages != n+500 || got.Bytes != (n+500)*200 {
			t.Errorf("Consume = %+v, %v; want %d messages", got, err, n+500)
		}
		if depth, err := rabbitperf.Depth(cfg); err != nil || depth != 0 {
			t.Errorf("queue depth after consuming %d, %v; want 0 (auto-ack)", depth, err)
		}
		checkLifecycle(t, p, "beam.pid", "epmd.pid")
	})
}

// buildTools builds the named commands of this module into a temporary bin
// directory, as `make build` does.
func buildTools(t *testing.T, pkgs ...string) string {
	t.Helper()
	bin := t.TempDir()
	args := append([]string{"build", "-o", bin + "/"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", pkgs, err, out)
	}
	return bin
}

// TestIntegrationRunPeers runs the whole harness against the real peers with
// tiny sizes and checks the runs, the figures and the report.
func TestIntegrationRunPeers(t *testing.T) {
	requirePeers(t)
	cfg := DefaultConfig(Quick)
	cfg.Systems = []results.System{results.ActiveMQ, results.RabbitMQ}
	cfg.Ablations = nil
	cfg.Out = t.TempDir()
	cfg.RepoDir = repoRoot(t)
	cfg.BinDir = buildTools(t, "./experiments/cmd/rabbitmq-perf-test")
	cfg.Repeats, cfg.MainRepeats = 1, 1
	cfg.PeerMessages, cfg.PeerTxMessages, cfg.PeerWarmUpMessages = 1500, 500, 500
	cfg.PeerTimeCap = time.Minute
	cfg.DiskTestBytes, cfg.LoopbackTestBytes = 8<<20, 64<<20
	set, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, sys := range cfg.Systems {
		prod := set.Select(results.Key{System: sys, Experiment: results.Main, Variant: results.VariantOnePerSend, Phase: results.Produce})
		cons := set.Select(results.Key{System: sys, Experiment: results.Main, Variant: results.VariantConsumer, Phase: results.Consume})
		tx := set.Select(results.Key{System: sys, Experiment: results.Main, Variant: results.VariantTx(cfg.TxSize), Phase: results.Produce})
		if len(prod) != 1 || len(cons) != 1 || len(tx) != 1 {
			t.Fatalf("%s: %d producer, %d consumer, %d transaction runs; want 1 each", sys, len(prod), len(cons), len(tx))
		}
		for i := range prod {
			if prod[i].Result.Messages != 1500 || cons[i].Result.Messages != 1500 || tx[i].Result.Messages != 500 {
				t.Errorf("%s rep %d: produced %d, consumed %d, in transactions %d; want 1500, 1500, 500",
					sys, i+1, prod[i].Result.Messages, cons[i].Result.Messages, tx[i].Result.Messages)
			}
			if prod[i].StorageBytesPerMsg < 200 {
				t.Errorf("%s rep %d: %v bytes on disk per 200-byte message", sys, i+1, prod[i].StorageBytesPerMsg)
			}
			if prod[i].BrokerRSSBytes == 0 {
				t.Errorf("%s rep %d: broker RSS not measured", sys, i+1)
			}
		}
	}
	for _, f := range []string{"report.md", "runs.csv", "runs.json", "fig-producer.png", "fig-consumer.png", "fig-storage.png"} {
		if info, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil || info.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	md, err := os.ReadFile(filepath.Join(cfg.Out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| Consumer (msg/s) | RabbitMQ | figure only |") {
		t.Errorf("report lacks the RabbitMQ consumer row:\n%s", md)
	}
	// Nothing is left running: the peers' ports are closed.
	for _, r := range set.Runs {
		if r.Error != "" {
			t.Errorf("run %s failed: %s", r.ID, r.Error)
		}
	}
	// Redrawing from runs.json gives the same report tables.
	if err := Rereport(cfg.Out); err != nil {
		t.Errorf("Rereport: %v", err)
	}
}

// TestIntegrationRunKafka runs the Kafka side of the harness end to end, every
// ablation included, against the real kafka-server and perf tools built from
// this module, with tiny sizes.
func TestIntegrationRunKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the broker and tools")
	}
	cfg := DefaultConfig(Quick)
	cfg.Systems = []results.System{results.Kafka}
	cfg.Out = t.TempDir()
	cfg.RepoDir = repoRoot(t)
	cfg.BinDir = buildTools(t, "./broker/cmd/kafka-server", "./producer/cmd/kafka-producer-perf-test",
		"./consumer/cmd/kafka-consumer-perf-test", "./experiments/cmd/kafka-payload-perf-test")
	cfg.Repeats, cfg.MainRepeats = 1, 1
	cfg.KafkaMessages, cfg.KafkaBatch1Messages = 20_000, 2_000
	cfg.AblationMessages, cfg.FlushMessages = 8_000, 2_000
	cfg.FlushIntervals, cfg.BatchSizes, cfg.PartitionCounts = []int{1, 1000}, []int{1, 50}, []int{1, 3}
	cfg.GrowthSizes, cfg.GrowthProbeMessages = []int64{1 << 20, 3 << 20}, 2_000
	cfg.DiskTestBytes, cfg.LoopbackTestBytes = 8<<20, 64<<20
	set, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b50 := set.Select(results.Key{System: results.Kafka, Experiment: results.Main, Variant: results.VariantBatch(50), Phase: results.Produce})
	cons := set.Select(results.Key{System: results.Kafka, Experiment: results.Main, Variant: results.VariantConsumer, Phase: results.Consume})
	if len(b50) != 1 || len(cons) != 1 || b50[0].Result.Messages != 20_000 || cons[0].Result.Messages != 20_000 {
		t.Fatalf("main runs: %+v / %+v", b50, cons)
	}
	// Paper §5: 9 bytes of overhead per message; 209 bytes for 200 bytes.
	if got := b50[0].StorageApparentBytesPerMsg; got != 209 {
		t.Errorf("Kafka stores %v bytes per 200-byte message, want 209", got)
	}
	// The cold consumer read the whole log from the disk: none of it was
	// cached when it began, and the hot one found all of it cached.
	cold := set.Select(results.Key{System: results.Kafka, Experiment: results.Main, Variant: results.VariantConsumerCold, Phase: results.Consume})
	if len(cold) != 1 || cold[0].Result.Messages != 20_000 || cold[0].Conditions == nil || cold[0].Conditions.CacheDrop == "" {
		t.Fatalf("cold consumer runs: %+v", cold)
	}
	if res := cold[0].Conditions.CacheResident; res == nil || *res > 0.25 {
		t.Errorf("cold consumer began with %v of its log cached, want almost none", res)
	}
	if res := cons[0].Conditions.CacheResident; res == nil || *res < 0.75 {
		t.Errorf("hot consumer began with %v of its log cached, want almost all", res)
	}
	if c := b50[0].Conditions; c == nil || c.WallSeconds <= 0 || c.BusyCPUSeconds <= 0 || c.ClientCPUSeconds <= 0 {
		t.Errorf("producer run's conditions %+v: want wall time, busy CPU and the client's CPU measured", c)
	}
	if b50[0].BrokerRSSBytes == 0 || b50[0].BrokerCPUSeconds <= 0 || len(b50[0].Result.Samples) == 0 {
		t.Errorf("broker RSS %d, CPU %v, %d samples: want all measured", b50[0].BrokerRSSBytes, b50[0].BrokerCPUSeconds, len(b50[0].Result.Samples))
	}
	for _, a := range DefaultAblations {
		if len(set.Select(results.Key{System: results.Kafka, Experiment: a})) == 0 {
			t.Errorf("ablation %s has no good run", a)
		}
	}
	// Every partition's messages were read back.
	for _, r := range set.Select(results.Key{System: results.Kafka, Experiment: partitionsExp, Phase: results.Consume}) {
		if r.Result.Messages != cfg.AblationMessages {
			t.Errorf("%s read %d messages, want %d", r.ID, r.Result.Messages, cfg.AblationMessages)
		}
	}
	// Log-like payloads compress.
	for _, r := range set.Select(results.Key{System: results.Kafka, Experiment: compressionExp, Variant: results.Setting("codec", "gzip"), Phase: results.Produce}) {
		if r.StorageBytesPerMsg <= 0 || r.StorageBytesPerMsg > 120 {
			t.Errorf("gzip stores %v bytes per log-like message, want well under 200", r.StorageBytesPerMsg)
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
	if got := strings.Count(string(md), "**Conclusion.**"); got != len(DefaultAblations) {
		t.Errorf("%d ablation conclusions in report.md, want %d", got, len(DefaultAblations))
	}
	for _, f := range []string{"fig-producer.png", "fig-consumer.png", "fig-storage.png", "fig-ablation-sendfile.png",
		"fig-ablation-flush.png", "fig-ablation-batch.png", "fig-ablation-compression.png", "fig-ablation-partitions.png", "fig-ablation-growth.png"} {
		if info, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil || info.Size() < 5000 {
			t.Errorf("figure %s missing or tiny: %v", f, err)
		}
	}
}
