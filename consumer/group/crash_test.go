package group

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest/replicatest"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// brokerHelperMain runs one broker with the replication layer until
// SIGTERM (or SIGKILL), configured by GROUP_BROKER_HELPER_{ID,DIR,ZK}; it
// writes "A <host:port>" to stdout once it serves.
func brokerHelperMain() int {
	env := func(k string) string { return os.Getenv("GROUP_BROKER_HELPER_" + k) }
	n, err := strconv.Atoi(env("ID"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "broker helper: bad id:", err)
		return 2
	}
	id, connect := wire.BrokerID(n), env("ZK")
	logger := testLogger().With("broker", id)
	cfg := broker.DefaultConfig()
	cfg.BrokerID = id
	cfg.Hostname, cfg.Port = "127.0.0.1", 0
	cfg.Log.Dir = env("DIR")
	cfg.Log.FlushInterval = 1
	cfg.Log.NumPartitions = 1
	cfg.EnableZookeeper, cfg.ZkConnect, cfg.ZkSessionTimeout = true, connect, testSession
	cfg.Logger = logger
	reg := zkcoord.NewRegistrar(zkcoord.Config{Connect: connect, SessionTimeout: testSession, Logger: logger})
	defer reg.Close()
	cfg.Registrar = reg
	replicatest.Tune(&cfg) // zk.sessiontimeout.ms is testSession
	cfg.Layer = replicatest.Layer(cfg)
	b, err := broker.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "broker helper:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	select {
	case <-b.Ready():
	case err := <-done:
		fmt.Fprintln(os.Stderr, "broker helper:", err)
		return 1
	}
	fmt.Printf("A %s\n", b.Addr())
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "broker helper:", err)
		return 1
	}
	return 0
}

// startBrokerProcess starts broker id as a process of its own.
func (e *env) startBrokerProcess(t *testing.T, id wire.BrokerID) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GROUP_BROKER_HELPER=1",
		"GROUP_BROKER_HELPER_ID="+strconv.Itoa(int(id)), "GROUP_BROKER_HELPER_DIR="+t.TempDir(),
		"GROUP_BROKER_HELPER_ZK="+e.zk)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "A "); ok {
				ready <- a
			}
		}
		close(ready)
	}()
	select {
	case _, ok := <-ready:
		if !ok {
			t.Fatalf("broker %d exited before serving", id)
		}
	case <-time.After(testTimeout):
		t.Fatalf("broker %d did not start", id)
	}
	return cmd
}

// TestGroupSurvivesLeaderSIGKILL: brokers in processes of their own; the
// leader of an RF=3 partition is SIGKILLed while the group consumer is in
// the middle of it. After the controller's election (the dead broker's
// ZooKeeper session expires first) the consumer fetches from the new leader
// from its own position: every message acknowledged by all replicas, before
// and after the crash, arrives exactly once.
func TestGroupSurvivesLeaderSIGKILL(t *testing.T) {
	e := newEnv(t)
	ids := []wire.BrokerID{0, 1, 2}
	procs := map[wire.BrokerID]*exec.Cmd{}
	for _, id := range ids {
		procs[id] = e.startBrokerProcess(t, id)
	}
	f := e.failoverMidPartition(t, ids, func(old wire.BrokerID) {
		if err := procs[old].Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		procs[old].Wait()
	})
	t.Logf("leader %d SIGKILLed: new leader in ZooKeeper after %v, every message consumed %v after the kill (ZooKeeper session timeout %v)",
		f.old, f.elected.Sub(f.failed).Round(time.Millisecond), time.Since(f.failed).Round(time.Millisecond), testSession)
}
