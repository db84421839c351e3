package faults

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// script runs scripts/testbed.sh with a state directory and run id of the
// test's own.
type script struct {
	t     *testing.T
	state string
	id    string
}

func (s script) run(args ...string) (string, error) {
	s.t.Helper()
	cmd := exec.Command("../../scripts/testbed.sh", args...)
	cmd.Env = append(os.Environ(), "TESTBED_STATE="+s.state, "TESTBED_ID="+s.id)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (s script) must(args ...string) string {
	s.t.Helper()
	out, err := s.run(args...)
	if err != nil {
		logs, _ := filepath.Glob(filepath.Join(s.state, "cluster", "*.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			out += fmt.Sprintf("\n--- %s (end):\n%s", l, b[max(0, len(b)-1500):])
		}
		s.t.Fatalf("testbed.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// leftovers lists the run's namespaces, its state directory and processes
// started on it that still exist.
func (s script) leftovers() []string {
	tr := &Tracer{runs: []string{s.id}, dirs: []string{s.state}}
	return tr.Leftovers()
}

// TestTestbedCluster brings the fault cluster up by hand with
// scripts/testbed.sh cluster (issue 13): ZooKeeper and two brokers on
// their hosts, a replicated topic made from the client host, a broker cut
// off from the other and healed, a broker killed and started again, then
// down: nothing of it is left. A cluster whose broker cannot start is
// removed whole by up itself.
func TestTestbedCluster(t *testing.T) {
	needRoot(t)
	bin := buildServer(t)
	s := script{t: t, state: filepath.Join(t.TempDir(), "tb"), id: fmt.Sprintf("ft%05x", rand.IntN(1<<20))}
	defer s.run("cluster", "down")
	out := s.must("cluster", "up", "--brokers=2", "--bin="+bin, "--zk.sessiontimeout.ms=2000")
	for _, want := range []string{"zookeeper 10.211.0.1:2181", "broker1 10.211.0.2:9092", "broker2 10.211.0.3:9092"} {
		if !strings.Contains(out, want) {
			t.Errorf("up printed %q, want %q in it", out, want)
		}
	}
	s.must("exec", "client", "--", filepath.Join(bin, "kafka-topics"), "--zookeeper=10.211.0.1:2181",
		"--create", "--topic=t", "--partitions=1", "--replication-factor=2")
	reach := func() bool {
		_, err := s.run("exec", "broker1", "--", "timeout", "2", "bash", "-c", "exec 3<>/dev/tcp/10.211.0.3/9092")
		return err == nil
	}
	if !reach() {
		t.Fatal("broker1 cannot reach broker2")
	}
	s.must("cluster", "isolate", "broker1", "broker2")
	if st := s.must("cluster", "status"); !strings.Contains(st, "broker1    10.211.0.2") || !strings.Contains(st, "rules: 2") {
		t.Errorf("status after isolate: %s", st)
	}
	if reach() {
		t.Error("broker1 reaches broker2 through the partition")
	}
	s.must("cluster", "heal")
	if !reach() {
		t.Error("broker1 cannot reach broker2 after heal")
	}
	s.must("cluster", "kill", "broker2")
	if st := s.must("cluster", "status"); !strings.Contains(st, "10.211.0.3   down") {
		t.Errorf("status after kill: %s", st)
	}
	s.must("cluster", "start", "broker2")
	if st := s.must("cluster", "status"); strings.Contains(st, "down") {
		t.Errorf("status after start: %s", st)
	}
	s.must("cluster", "down")
	if left := s.leftovers(); len(left) > 0 {
		t.Errorf("left behind after down: %q", left)
	}

	// A broker that cannot start (a bad server.properties value): up fails
	// and removes what it made.
	s2 := script{t: t, state: filepath.Join(t.TempDir(), "tb"), id: fmt.Sprintf("ft%05x", rand.IntN(1<<20))}
	out, err := s2.run("cluster", "up", "--brokers=1", "--bin="+bin, "--log.flush.interval=many")
	if err == nil || !strings.Contains(out, "broker1's server exited") {
		t.Fatalf("up with a bad key: %v\n%s", err, out)
	}
	if left := s2.leftovers(); len(left) > 0 {
		t.Errorf("left behind after a failed up: %q", left)
	}
}
