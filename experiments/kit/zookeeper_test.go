package kit

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/zkcoord"
)

// requireZooKeeper skips in -short mode and fails where Debian's package
// is missing.
func requireZooKeeper(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts ZooKeeper servers (java)")
	}
	if _, err := os.Stat(zooKeeperJar); err != nil {
		t.Fatalf("ZooKeeper is not installed (scripts/zookeeper.sh start installs it): %v", err)
	}
}

// freePorts returns n distinct loopback ports free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

func TestZooKeeperStandalone(t *testing.T) {
	requireZooKeeper(t)
	dir := t.TempDir()
	z := ZooKeeper{Name: "zookeeper", Host: Local("zk"), Port: freePorts(t, 1)[0], Dir: dir, Log: filepath.Join(dir, "zookeeper.log")}
	ctx := context.Background()
	p, err := z.Start(ctx, 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if m := z.Mode(ctx); m != "standalone" {
		t.Errorf("mode %q, want standalone", m)
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Errorf("stop: %v", err)
	}
	if m := z.Mode(ctx); m != "" {
		t.Errorf("mode %q after stop, want none", m)
	}
}

// TestEnsembleSurvivesKillingOne starts three servers on loopback (each its
// own ports, data directory and myid), checks that they elect one leader
// and serve a write, kills the leader, and checks that the other two elect
// a new one and still serve what was written.
func TestEnsembleSurvivesKillingOne(t *testing.T) {
	requireZooKeeper(t)
	dir := t.TempDir()
	ports := freePorts(t, 9)
	var peers []Peer
	var members []ZooKeeper
	for i := range 3 {
		id := i + 1
		peers = append(peers, Peer{ID: id, Addr: "127.0.0.1", QuorumPort: ports[3+i], ElectionPort: ports[6+i]})
		name := fmt.Sprintf("zk%d", id)
		members = append(members, ZooKeeper{Name: name, Host: Local(name), Port: ports[i], ID: id,
			Dir: filepath.Join(dir, name), Log: filepath.Join(dir, name+".log")})
	}
	e, err := NewEnsemble(members, peers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	ctx := context.Background()
	if err := e.Start(ctx, 120*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, id := range e.IDs() {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("zk%d", id), "data", "myid"))
		if err != nil || strings.TrimSpace(string(b)) != fmt.Sprint(id) {
			t.Errorf("member %d's myid = %q, %v", id, b, err)
		}
	}
	leader := e.Leader(ctx)
	if leader == 0 {
		t.Fatal("no member leads")
	}
	for _, id := range e.IDs() {
		if m := e.Mode(ctx, id); id != leader && m != "follower" {
			t.Errorf("member %d: mode %q, want follower", id, m)
		}
	}
	conn, err := zkcoord.Dial(ctx, zkcoord.Config{Connect: e.Connect(), SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.CreatePersistent("/before", []byte("one")); err != nil {
		t.Fatal(err)
	}

	e.Kill(leader)
	if e.Running(leader) {
		t.Fatalf("member %d still running after Kill", leader)
	}
	wait.Within(t, 90*time.Second, "a new leader among the other two", func() bool {
		l := e.Leader(ctx)
		return l != 0 && l != leader
	})
	if err := conn.CreatePersistent("/after", []byte("two")); err != nil {
		t.Fatalf("write after the leader's death: %v", err)
	}
	if b, err := conn.Get("/before"); err != nil || string(b) != "one" {
		t.Errorf("/before = %q, %v", b, err)
	}
	// The killed member comes back as a follower.
	if err := e.Launch(ctx, leader); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitServing(ctx, leader, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	if m := e.Mode(ctx, leader); m != "follower" {
		t.Errorf("restarted member %d: mode %q, want follower", leader, m)
	}
}
