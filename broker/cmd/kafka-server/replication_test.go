package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/replica"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"
)

// proc is a kafka-server process started from this test binary.
type proc struct {
	cmd    *exec.Cmd
	dir    string
	stderr bytes.Buffer
}

func startServer(t *testing.T, id int, dir, connect string, extra ...string) *proc {
	t.Helper()
	p := &proc{dir: dir}
	p.cmd = exec.Command(os.Args[0])
	args := []string{fmt.Sprintf("--brokerid=%d", id), "--log.dir=" + dir, "--zk.connect=" + connect,
		"--zk.sessiontimeout.ms=2000", "--hostname=127.0.0.1", "--port=0", "--log.flush.interval=1",
		"--replica.lag.time.max.ms=1000", "--replica.fetch.wait.max.ms=100", "--replica.fetch.backoff.ms=20",
		"--replica.high.watermark.checkpoint.interval.ms=100", "--min.insync.replicas=2"}
	args = append(args, extra...)
	p.cmd.Env = append(os.Environ(), "KAFKA_SERVER_RUN_MAIN=1", "KAFKA_SERVER_ARGS="+strings.Join(args, " "))
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() && p.cmd.ProcessState == nil {
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.cmd.Process.Signal(syscall.SIGQUIT) // the Go runtime prints every goroutine
			p.cmd.Wait()
		}
		p.kill()
		if t.Failed() {
			t.Logf("broker %d's log:\n%s", id, p.stderr.String())
		}
	})
	return p
}

func (p *proc) kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
	}
}

// roundTrip sends one frame and reads the response.
func roundTrip(addr string, frame []byte) (wire.ErrorCode, []byte, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, nil, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(frame); err != nil {
		return 0, nil, err
	}
	var hdr [6]byte
	if _, err := io.ReadFull(nc, hdr[:]); err != nil {
		return 0, nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:4])-2)
	_, err = io.ReadFull(nc, body)
	return wire.ErrorCode(binary.BigEndian.Uint16(hdr[4:])), body, err
}

func produceAll(addr string, payload []byte) wire.ErrorCode {
	_, body, err := roundTrip(addr, wire.AppendProduceAcksRequest(nil, &wire.ProduceAcksRequest{Acks: wire.AcksAll, TimeoutMs: 3000,
		Parts: []wire.ProduceRequest{{Topic: "k", Partition: 0, Messages: wire.NewMessageSet(payload)}}}))
	if err != nil {
		return wire.CodeUnknown
	}
	rs, err := wire.DecodeProduceAcksResponse(body)
	if err != nil || len(rs) != 1 {
		return wire.CodeUnknown
	}
	return rs[0].Code
}

// readAll reads partition k-0 from addr with 0.7 FETCHes.
func readAll(addr string) ([]string, error) {
	var out []string
	var off wire.Offset
	for {
		code, body, err := roundTrip(addr, wire.AppendRequest(nil, &wire.Request{Type: wire.RequestFetch,
			Fetch: []wire.FetchRequest{{Topic: "k", Partition: 0, Offset: off, MaxSize: 1 << 20}}}))
		if err != nil || code != wire.CodeNone {
			return out, fmt.Errorf("fetch at %d: %v %v", off, code, err)
		}
		it := wire.NewIterator(body, off)
		n := 0
		for it.Next() {
			out = append(out, string(it.Message().Payload))
			n++
		}
		if n == 0 {
			return out, nil
		}
		off = it.NextOffset()
	}
}

// startCluster starts three kafka-server processes (ids 0-2, extra flags
// appended) on a fresh ZooKeeper chroot and waits until all three are
// registered; it returns the ZooKeeper connect string, a connection, the
// processes and their addresses.
func startCluster(t *testing.T, extra ...string) (connect string, zk *zkcoord.Conn, procs map[wire.BrokerID]*proc, addrs map[wire.BrokerID]string) {
	t.Helper()
	connect = zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	zk, err := zkcoord.Dial(ctx, zkcoord.Config{Connect: connect})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zk.Close() })
	procs = map[wire.BrokerID]*proc{}
	for id := range 3 {
		procs[wire.BrokerID(id)] = startServer(t, id, t.TempDir(), connect, extra...)
	}
	addrs = map[wire.BrokerID]string{}
	wait.Within(t, 30*time.Second, "three brokers to register", func() bool {
		live, err := zkcoord.RegistryOn(zk).Brokers(false)
		if err != nil || len(live) != 3 {
			return false
		}
		for id, b := range live {
			addrs[id] = b.Addr()
		}
		return true
	})
	return connect, zk, procs, addrs
}

// TestSIGKILLLeader runs three kafka-server processes on a real ZooKeeper,
// writes with acks=all and min.insync.replicas=2, SIGKILLs the leader, and
// checks that a new leader from the ISR takes over within the session
// timeout and a few seconds, that no acknowledged message is lost, and that
// the killed broker, restarted, rejoins with the same bytes.
func TestSIGKILLLeader(t *testing.T) {
	connect, zk, procs, addrs := startCluster(t)
	a, err := replica.AssignReplicas([]wire.BrokerID{0, 1, 2}, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := zkcoord.ReplicationOn(zk).CreateTopic("k", a); err != nil {
		t.Fatal(err)
	}
	leaderOf := func() (zkcoord.PartitionState, bool) {
		st, _, ok, err := zkcoord.ReplicationOn(zk).PartitionStateOf("k", 0)
		return st, ok && err == nil
	}
	var st zkcoord.PartitionState
	wait.Within(t, 30*time.Second, "a leader with three in sync that takes writes", func() bool {
		var ok bool
		st, ok = leaderOf()
		return ok && len(st.ISR) == 3 && produceAll(addrs[st.Leader], []byte("warm-up")) == wire.CodeNone
	})
	acked := []string{"warm-up"}
	for i := range 200 {
		m := fmt.Sprintf("m%04d", i)
		if code := produceAll(addrs[st.Leader], []byte(m)); code != wire.CodeNone {
			t.Fatalf("produce %s: %v", m, code)
		}
		acked = append(acked, m)
	}

	old := st
	procs[old.Leader].kill()
	killed := time.Now()
	wait.Within(t, 30*time.Second, "a new leader", func() bool {
		var ok bool
		st, ok = leaderOf()
		return ok && st.Leader != old.Leader && st.LeaderEpoch > old.LeaderEpoch
	})
	t.Logf("new leader %d (epoch %d) %v after SIGKILL of %d; session timeout 2s", st.Leader, st.LeaderEpoch, time.Since(killed).Round(time.Millisecond), old.Leader)
	if !slices.Contains(old.ISR, st.Leader) {
		t.Fatalf("new leader %d not from the ISR %v", st.Leader, old.ISR)
	}
	if d := time.Since(killed); d > 2*time.Second+10*time.Second {
		t.Fatalf("election took %v", d)
	}
	for i := 200; i < 220; i++ {
		m := fmt.Sprintf("m%04d", i)
		wait.Within(t, 30*time.Second, "the new leader to take "+m, func() bool {
			return produceAll(addrs[st.Leader], []byte(m)) == wire.CodeNone
		})
		acked = append(acked, m)
	}
	var got []string
	wait.Within(t, 30*time.Second, "every acknowledged message on the new leader", func() bool {
		got, err = readAll(addrs[st.Leader])
		return err == nil && len(got) >= len(acked)
	})
	// Retried writes may appear twice; none may be missing or reordered.
	got = slices.Compact(got)
	if !slices.Equal(got, acked) {
		t.Fatalf("new leader holds %d distinct messages, want the %d acknowledged", len(got), len(acked))
	}

	// The killed broker comes back on its log and rejoins the ISR.
	procs[old.Leader] = startServer(t, int(old.Leader), procs[old.Leader].dir, connect)
	wait.Within(t, 30*time.Second, "the old leader back in the ISR", func() bool {
		s, ok := leaderOf()
		return ok && len(s.ISR) == 3
	})
	want, err := os.ReadFile(filepath.Join(procs[st.Leader].dir, "k-0", "00000000000000000000.kafka"))
	if err != nil {
		t.Fatal(err)
	}
	wait.Within(t, 30*time.Second, "the rejoined replica's bytes to match the leader's", func() bool {
		b, err := os.ReadFile(filepath.Join(procs[old.Leader].dir, "k-0", "00000000000000000000.kafka"))
		return err == nil && len(b) >= len(want) && bytes.Equal(b[:len(want)], want)
	})
}

// TestZombieLeader stops the leader with SIGSTOP past its ZooKeeper session,
// lets the controller elect another, and resumes it: the zombie acknowledges
// nothing (acks=all), and once it follows the new leader its log is the new
// leader's, byte for byte, its own unacknowledged tail truncated.
func TestZombieLeader(t *testing.T) {
	_, zk, procs, addrs := startCluster(t)
	if err := zkcoord.ReplicationOn(zk).CreateTopic("k", zkcoord.Assignment{0: {0, 1, 2}}); err != nil {
		t.Fatal(err)
	}
	var st zkcoord.PartitionState
	wait.Within(t, 30*time.Second, "a leader that takes writes", func() bool {
		s, _, ok, err := zkcoord.ReplicationOn(zk).PartitionStateOf("k", 0)
		st = s
		return err == nil && ok && len(s.ISR) == 3 && produceAll(addrs[s.Leader], []byte("before")) == wire.CodeNone
	})
	zombie := st.Leader
	if err := procs[zombie].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var next zkcoord.PartitionState
	wait.Within(t, 30*time.Second, "a new leader while the old one is stopped", func() bool {
		s, _, ok, err := zkcoord.ReplicationOn(zk).PartitionStateOf("k", 0)
		next = s
		return err == nil && ok && s.Leader != zombie && s.LeaderEpoch > st.LeaderEpoch
	})
	wait.Within(t, 30*time.Second, "the new leader to take writes", func() bool {
		return produceAll(addrs[next.Leader], []byte("after")) == wire.CodeNone
	})
	if err := procs[zombie].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if code := produceAll(addrs[zombie], []byte(fmt.Sprintf("zombie-%d", i))); code == wire.CodeNone {
			t.Fatalf("the zombie acknowledged write %d", i)
		} else {
			t.Logf("zombie write %d: %v", i, code)
		}
	}
	leaderFile := filepath.Join(procs[next.Leader].dir, "k-0", "00000000000000000000.kafka")
	zombieFile := filepath.Join(procs[zombie].dir, "k-0", "00000000000000000000.kafka")
	wait.Within(t, 30*time.Second, "the old leader to hold exactly the new leader's bytes", func() bool {
		a, err1 := os.ReadFile(leaderFile)
		b, err2 := os.ReadFile(zombieFile)
		return err1 == nil && err2 == nil && bytes.Equal(a, b)
	})
	got, err := readAll(addrs[next.Leader])
	if err != nil || !slices.Equal(slices.Compact(got), []string{"before", "after"}) {
		t.Fatalf("new leader holds %q, %v", got, err)
	}
}

// TestISRFollowsSIGSTOP: a follower stopped with SIGSTOP (its ZooKeeper
// session still alive) leaves the ISR after replica.lag.time.max.ms, by the
// leader's conditional write; after SIGCONT it catches up and rejoins.
func TestISRFollowsSIGSTOP(t *testing.T) {
	// A session long enough to outlast the stop: only the lag timer acts.
	_, zk, procs, addrs := startCluster(t, "--zk.sessiontimeout.ms=20000")
	if err := zkcoord.ReplicationOn(zk).CreateTopic("k", zkcoord.Assignment{0: {0, 1, 2}}); err != nil {
		t.Fatal(err)
	}
	var st zkcoord.PartitionState
	isr := func(n int) func() bool {
		return func() bool {
			s, _, ok, err := zkcoord.ReplicationOn(zk).PartitionStateOf("k", 0)
			st = s
			return err == nil && ok && len(s.ISR) == n
		}
	}
	wait.Within(t, 30*time.Second, "an ISR of 3", isr(3))
	wait.Within(t, 30*time.Second, "the leader to take writes", func() bool {
		return produceAll(addrs[st.Leader], []byte("one")) == wire.CodeNone
	})
	follower := (st.Leader + 1) % 3
	if err := procs[follower].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	wait.Within(t, 30*time.Second, "the stopped follower to leave the ISR", isr(2))
	if slices.Contains(st.ISR, follower) {
		t.Fatalf("ISR %v still holds the stopped follower %d", st.ISR, follower)
	}
	t.Logf("ISR shrank to %v %v after SIGSTOP (lag time 1s)", st.ISR, time.Since(stopped).Round(time.Millisecond))
	if code := produceAll(addrs[st.Leader], []byte("two")); code != wire.CodeNone {
		t.Fatalf("acks=all with two in sync: %v", code)
	}
	if err := procs[follower].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	wait.Within(t, 30*time.Second, "the follower to rejoin the ISR", isr(3))
}
