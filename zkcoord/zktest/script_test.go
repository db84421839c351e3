package zktest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestScriptStartStopLoop starts and stops a server with scripts/zookeeper.sh
// 50 times in a row, the way `make test`, `make run` and CI start theirs. Every
// start must succeed with the server owned (its pid file naming the java
// process that serves), and every stop must leave nothing running.
//
// Before the fix, about 1 start in 18 failed with "the server (pid N) exited
// during startup" while the server went on serving, disowned: the script
// decided "exited" from one read of /proc/PID/cmdline, which during the
// launch's execs (bash -> nohup -> setsid -> java, one PID) reads as the old
// program or, for an instant, as empty.
func TestScriptStartStopLoop(t *testing.T) {
	skipShort(t)
	script, err := findScript()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zoo.cfg")
	const rounds = 50
	for round := 1; round <= rounds; round++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		run := func(verb string) (string, error) {
			cmd := exec.Command(script, verb, strconv.Itoa(port), dir)
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		t.Cleanup(func() { _, _ = run("stop") }) // after a failure, nothing left behind

		if out, err := run("start"); err != nil {
			t.Fatalf("round %d: start: %v\n%s", round, err, out)
		}
		pid, err := pidFile(filepath.Join(dir, "zookeeper.pid"))
		if err != nil {
			t.Fatalf("round %d: after a successful start: %v", round, err)
		}
		if !isServer(pid, cfg) {
			t.Fatalf("round %d: the pid file names %d, which is not the java server of %s", round, pid, cfg)
		}
		if out, err := run("status"); err != nil {
			t.Fatalf("round %d: status after start: %v\n%s", round, err, out)
		}
		if out, err := run("stop"); err != nil || !strings.Contains(out, "stopped") {
			t.Fatalf("round %d: stop: %v\n%s", round, err, out)
		}
		if pids := serversOf(cfg); len(pids) > 0 {
			t.Fatalf("round %d: stop left %v running", round, pids)
		}
		// (Not "the port is closed": other tests' listeners on 127.0.0.1:0
		// may be given the same port at once.)
		if out, err := run("status"); err == nil {
			t.Fatalf("round %d: status after stop succeeded:\n%s", round, out)
		}
	}
}

// TestScriptStartFailureLeavesNothing: a server that cannot start (its port
// taken by something that is not ZooKeeper) makes start fail with nothing of
// its own left running.
func TestScriptStartFailureLeavesNothing(t *testing.T) {
	skipShort(t)
	script, err := findScript()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	out, err := exec.Command(script, "start", strconv.Itoa(port), dir).CombinedOutput()
	if err == nil {
		t.Fatalf("start on a taken port succeeded:\n%s", out)
	}
	if pids := serversOf(filepath.Join(dir, "zoo.cfg")); len(pids) > 0 {
		t.Fatalf("a failed start left %v running:\n%s", pids, out)
	}
}

func pidFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("pid file %s: %w", path, err)
	}
	return pid, nil
}

// isServer reports whether pid runs java with cfg as its last argument.
func isServer(pid int, cfg string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	return len(args) > 1 && filepath.Base(args[0]) == "java" && args[len(args)-1] == cfg
}

// serversOf lists the live processes whose command line names cfg.
func serversOf(cfg string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(cfg)) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}
