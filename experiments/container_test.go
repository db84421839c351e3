package experiments

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/experiments/results"
)

// requireContainers installs Docker and debootstrap through
// scripts/containers.sh, as kafka-experiments --runtime=container does. In CI
// (CI=1) anything missing fails the test; elsewhere a machine where they cannot
// be installed (no root) skips it, saying why.
func requireContainers(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs servers in Docker containers")
	}
	script := filepath.Join(repoRoot(t), "scripts", "containers.sh")
	if out, err := exec.Command(script, "install").CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("scripts/containers.sh install: %v\n%s", err, out)
		}
		t.Skipf("Docker cannot be installed here (scripts/containers.sh install: %v)", err)
	}
	return script
}

// dockerdAnswers reports whether a Docker daemon answers (containers.sh status
// exits 3 when none does).
func dockerdAnswers(t *testing.T, script string) bool {
	t.Helper()
	out, err := exec.Command(script, "status").CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		return false
	}
	if err != nil {
		t.Fatalf("scripts/containers.sh status: %v\n%s", err, out)
	}
	return true
}

// TestIntegrationRunContainers runs the harness with every system in its own
// container, tiny sizes, and checks that each was measured there under the
// configured limits, and that nothing of the run is left: no container, and no
// dockerd if the run started one.
func TestIntegrationRunContainers(t *testing.T) {
	script := requireContainers(t)
	requirePeers(t) // the ActiveMQ driver's client jars and JDK, on this machine
	hadDockerd := dockerdAnswers(t, script)
	cfg := DefaultConfig(Quick)
	cfg.Runtime = ContainerRuntime
	cfg.ContainerCPUs, cfg.ContainerMemory = "1", "1536m"
	cfg.Ablations = nil
	cfg.Out = t.TempDir()
	cfg.WorkDir = t.TempDir()
	cfg.RepoDir = repoRoot(t)
	cfg.BinDir = buildTools(t, "./broker/cmd/kafka-server", "./producer/cmd/kafka-producer-perf-test",
		"./consumer/cmd/kafka-consumer-perf-test", "./experiments/cmd/rabbitmq-perf-test")
	cfg.Repeats, cfg.MainRepeats = 1, 1
	cfg.KafkaMessages, cfg.KafkaBatch1Messages = 20_000, 2_000
	cfg.PeerMessages, cfg.PeerTxMessages, cfg.PeerWarmUpMessages = 1500, 500, 500
	cfg.PeerTimeCap = time.Minute
	cfg.DiskTestBytes, cfg.LoopbackTestBytes = 8<<20, 64<<20
	set, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range set.Runs {
		if r.Error != "" {
			t.Errorf("run %s failed: %s", r.ID, r.Error)
		}
		if r.Runtime != ContainerRuntime || r.Container == nil {
			t.Errorf("run %s: runtime %q, container %+v; want a container", r.ID, r.Runtime, r.Container)
			continue
		}
		c := r.Container
		if c.Image != "kafka-exp/"+string(r.System)+":latest" || !strings.HasPrefix(c.ImageID, "sha256:") ||
			c.CPUs != "1" || c.Memory != "1536m" {
			t.Errorf("run %s: container %+v, want image kafka-exp/%s:latest with its ID, --cpus=1 --memory=1536m", r.ID, c, r.System)
		}
		if c.MemoryPeakBytes <= 0 || c.MemoryPeakBytes > 1536<<20 {
			t.Errorf("run %s: memory peak %d bytes, want within the 1536m limit", r.ID, c.MemoryPeakBytes)
		}
		if r.BrokerCPUSeconds <= 0 || r.BrokerRSSBytes <= 0 {
			t.Errorf("run %s: CPU %v s, resident %d bytes: want both read from the cgroup", r.ID, r.BrokerCPUSeconds, r.BrokerRSSBytes)
		}
	}
	b50 := set.Select(results.Key{System: results.Kafka, Experiment: results.Main, Variant: results.VariantBatch(50), Phase: results.Produce})
	if len(b50) != 1 || b50[0].Result.Messages != 20_000 {
		t.Fatalf("Kafka batch-50 runs: %+v", b50)
	}
	// The log on the bind-mounted volume: paper §5's 9 bytes per message.
	if got := b50[0].StorageApparentBytesPerMsg; got != 209 {
		t.Errorf("Kafka stores %v bytes per 200-byte message in its container, want 209", got)
	}
	for _, sys := range []results.System{results.ActiveMQ, results.RabbitMQ} {
		prod := set.Select(results.Key{System: sys, Experiment: results.Main, Variant: results.VariantOnePerSend, Phase: results.Produce})
		cons := set.Select(results.Key{System: sys, Experiment: results.Main, Variant: results.VariantConsumer, Phase: results.Consume})
		if len(prod) != 1 || len(cons) != 1 || prod[0].Result.Messages != 1500 || cons[0].Result.Messages != 1500 {
			t.Errorf("%s: %d producer and %d consumer runs, want one each of 1500 messages", sys, len(prod), len(cons))
			continue
		}
		if prod[0].StorageBytesPerMsg < 200 {
			t.Errorf("%s: %v bytes on disk per 200-byte message", sys, prod[0].StorageBytesPerMsg)
		}
	}
	md, err := os.ReadFile(filepath.Join(cfg.Out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "--cpus=1 --memory=1536m") || !strings.Contains(string(md), "--runtime=container") {
		t.Errorf("the report does not state the runtime and the limits:\n%s", md)
	}
	// Nothing is left: no container of this run, and no dockerd the run
	// started unless another user of scripts/containers.sh holds it.
	if !dockerdAnswers(t, script) {
		return
	}
	out, err := exec.Command(script, "status").CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/containers.sh status: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, cfg.WorkDir) {
			t.Errorf("container left after the run: %s", line)
		}
		if !hadDockerd && strings.HasPrefix(line, "dockerd running") && strings.Contains(line, " users=0 ") {
			t.Errorf("the run started a dockerd that nobody uses and left it running: %s", line)
		}
	}
}

// TestContainersScriptSharesDockerd runs scripts/containers.sh against a
// dockerd of its own (its own socket, run and data directories) and checks the
// leases: a dockerd two callers started and use stays up while either uses it,
// is stopped by the last one's stop, and a caller that has exited counts no
// more.
func TestContainersScriptSharesDockerd(t *testing.T) {
	script := requireContainers(t)
	dir, err := os.MkdirTemp("", "kafka-containers-") // short: containerd's socket paths are bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	env := append(os.Environ(), "CONTAINERS_RUN="+filepath.Join(dir, "run"),
		"CONTAINERS_DATA_ROOT="+filepath.Join(dir, "data"), "CONTAINERS_SOCKET="+filepath.Join(dir, "docker.sock"))
	// Two callers, each a process that lives until the test ends it.
	caller := func() *exec.Cmd {
		c := exec.Command("sleep", "600")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c
	}
	a, b := caller(), caller()
	run := func(as *exec.Cmd, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(script, args...)
		cmd.Env = env
		if as != nil {
			cmd.Env = append(cmd.Env, "CONTAINERS_LEASE_PID="+strconv.Itoa(as.Process.Pid))
		}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		}
		if err != nil {
			t.Fatalf("containers.sh %v: %v\n%s", args, err, out)
		}
		return string(out), 0
	}
	t.Cleanup(func() { run(nil, "stop") }) // whatever the test left
	if out, code := run(a, "start"); code != 0 || !strings.Contains(out, "dockerd started") {
		t.Fatalf("first start: exit %d\n%s", code, out)
	}
	if out, code := run(b, "start"); code != 0 || strings.Contains(out, "dockerd started") {
		t.Fatalf("second start should use the running dockerd: exit %d\n%s", code, out)
	}
	if out, _ := run(nil, "status"); !strings.Contains(out, "users=2") {
		t.Errorf("status with two users:\n%s", out)
	}
	if out, code := run(a, "stop"); code != 0 || !strings.Contains(out, "left running: 1 other user") {
		t.Errorf("stop while another caller uses the dockerd: exit %d\n%s", code, out)
	}
	if _, code := run(nil, "status"); code != 0 {
		t.Fatalf("the dockerd stopped under its other user (status exit %d)", code)
	}
	// The other caller exits without stopping: its lease no longer counts.
	if err := b.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = b.Wait()
	if out, code := run(a, "stop"); code != 0 || !strings.Contains(out, "dockerd stopped") {
		t.Errorf("last stop: exit %d\n%s", code, out)
	}
	if out, code := run(nil, "status"); code != 3 {
		t.Errorf("status after the last stop: exit %d, want 3 (stopped)\n%s", code, out)
	}
}
