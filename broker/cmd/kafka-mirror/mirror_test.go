package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/audit"
	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/broker/cli"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	caudit "github.com/netdb11/kafka/consumer/audit"
	"github.com/netdb11/kafka/consumer/group"
	"github.com/netdb11/kafka/producer"
	paudit "github.com/netdb11/kafka/producer/audit"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/spf13/pflag"
)

// TestMain lets the test binary run as kafka-mirror (MIRROR_HELPER=1, the
// arguments in MIRROR_ARGS, one per line), for the SIGKILL test.
func TestMain(m *testing.M) {
	if os.Getenv("MIRROR_HELPER") == "1" {
		os.Exit(cli.Main(command))
	}
	os.Exit(m.Run())
}

const timeout = 20 * time.Second

// cluster is one datacenter's cluster: a ZooKeeper chroot and a broker
// with two partitions per topic registered in it.
type cluster struct {
	zk  string
	b   *brokertest.Broker
	obs *zkcoord.Conn
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	cfg := brokertest.Config()
	cfg.BrokerID = 1
	cfg.Log.NumPartitions = 2
	zk, b := zkbroker.StartInChroot(t, cfg)
	obs := zkbroker.Dial(t, zkcoord.Config{Connect: zk})
	return &cluster{zk: zk, b: b, obs: obs}
}

func (c *cluster) waitTopic(t *testing.T, topic string) {
	t.Helper()
	zkbroker.WaitTopic(t, c.obs, topic, 1, 2)
}

// auditedProducer produces n audited messages to topic on c (through
// ZooKeeper, so keyed by i and spread over both partitions) and closes,
// which publishes the last window's event.
func auditedProducer(t *testing.T, c *cluster, topic string, n int, each func(i int)) {
	t.Helper()
	pcfg := producer.DefaultConfig()
	pcfg.ZkConnect = c.zk
	p, err := producer.New(pcfg)
	if err != nil {
		t.Error(err)
		return
	}
	ap, err := paudit.New(p, paudit.Config{Host: "fe-1", Window: 500 * time.Millisecond})
	if err != nil {
		t.Error(err)
		return
	}
	const batch = 20
	for i := 0; i < n; i += batch {
		var msgs []producer.Message
		for j := i; j < min(i+batch, n); j++ {
			msgs = append(msgs, producer.Message{Key: []byte(fmt.Sprint(j)), Value: fmt.Appendf(nil, "message %d", j)})
		}
		if err := ap.Send(context.Background(), topic, msgs...); err != nil {
			t.Error(err)
			return
		}
		if each != nil {
			each(i)
		}
	}
	if err := ap.Close(); err != nil {
		t.Error(err)
	}
}

// auditor reads a cluster's audit into a counter, incrementally.
type auditor struct {
	t *testing.T
	c *cluster
	r *caudit.Reader
	n *caudit.Counter
}

func newAuditor(t *testing.T, c *cluster) *auditor { return newAuditorOf(t, c, "pv") }

// newAuditorOf audits one topic of a cluster.
func newAuditorOf(t *testing.T, c *cluster, only string) *auditor {
	t.Helper()
	n := caudit.NewCounter()
	r, err := caudit.NewReader(context.Background(), caudit.ReaderConfig{ZkConnect: c.zk, Only: func(topic string) bool { return topic == only }}, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return &auditor{t: t, c: c, r: r, n: n}
}

// complete reports whether every announced message arrived and the events
// announce want messages.
func (a *auditor) complete(want int64) (caudit.Row, bool) {
	a.c.b.Flush(a.t)
	if err := a.r.CatchUp(context.Background()); err != nil {
		a.t.Logf("audit: %v", err)
		return caudit.Row{}, false
	}
	tot := caudit.Totals(a.n.Report())
	return tot, tot.Sent == want && tot.Missing == 0
}

func TestHelpAndBadFlags(t *testing.T) {
	_, help, err := command.Capture(context.Background(), "--help")
	if !errors.Is(err, pflag.ErrHelp) {
		t.Fatal(err)
	}
	for _, opt := range []string{"--source-zookeeper", "--target-zookeeper", "--target-broker-list", "--whitelist", "--blacklist", "--num-streams", "--consumer-config", "--producer-config"} {
		if !strings.Contains(help, opt) {
			t.Errorf("--help does not describe %s", opt)
		}
	}
	var usage *cli.UsageError
	for _, args := range [][]string{
		nil,
		{"--source-zookeeper=127.0.0.1:1", "--target-zookeeper=127.0.0.1:2"},                                     // no filter
		{"--source-zookeeper=127.0.0.1:1", "--whitelist=.*"},                                                     // no target
		{"--source-zookeeper=127.0.0.1:1", "--target-zookeeper=127.0.0.1:2", "--whitelist=(", "--num-streams=1"}, // bad regex
		{"--source-zookeeper=127.0.0.1:1", "--target-zookeeper=127.0.0.1:2", "--whitelist=a", "--blacklist=b"},   // both
		{"--source-zookeeper=127.0.0.1:1", "--target-broker-list=0:h:1", "--whitelist=.*", "--num-streams=0"},    // streams
	} {
		if _, _, err := command.Capture(context.Background(), args...); !errors.As(err, &usage) {
			t.Errorf("%q: err = %v, want a usage error", args, err)
		}
	}
	// 0.7.2's spelling of the options is accepted too.
	if _, _, err := command.Capture(context.Background(), "--source-zookeeper=127.0.0.1:1", "--target-broker-list=0:h:1", "--whitelist=.*", "--num.streams=0"); !errors.As(err, &usage) || !strings.Contains(err.Error(), "--num-streams=0") {
		t.Errorf("--num.streams=0: %v", err)
	}
	dir := t.TempDir()
	async := dir + "/producer.properties"
	if err := os.WriteFile(async, []byte("producer.type=async\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = command.Capture(context.Background(), "--source-zookeeper=127.0.0.1:1", "--target-broker-list=0:h:1", "--whitelist=.*", "--producer.config="+async)
	if err == nil || !strings.Contains(err.Error(), "producer.type=sync") {
		t.Errorf("async producer config: %v", err)
	}
}

// TestMirrorCopiesEverythingAndPreservesPartitions: N audited messages on
// the live cluster arrive on the analysis cluster, none missing, each in
// the partition of the same index; a clean stop leaves the group with no
// lag; topics outside the whitelist stay behind.
func TestMirrorCopiesEverythingAndPreservesPartitions(t *testing.T) {
	live, analysis := startCluster(t), startCluster(t)
	const n = 600
	auditedProducer(t, live, "pv", n, nil)
	live.waitTopic(t, "pv")
	// A topic the whitelist leaves out.
	auditedProducer(t, live, "secret", 10, nil)
	// The analysis cluster has the topic with two partitions already, so
	// that every message keeps its partition.
	wcfg := producer.DefaultConfig()
	wcfg.BrokerList = fmt.Sprintf("1:%s", analysis.b.Addr)
	warm, err := producer.New(wcfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Send(context.Background(), "pv", producer.Message{Value: []byte("warm-up, not audited")}); err != nil {
		t.Fatal(err)
	}
	warm.Close()
	analysis.waitTopic(t, "pv")

	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut brokertest.Buffer
	done := make(chan error, 1)
	props := t.TempDir() + "/consumer.properties"
	if err := os.WriteFile(props, []byte("groupid=mirror-test\nfetcher.backoff.ms=20\nautocommit.interval.ms=100\nzk.sessiontimeout.ms=2000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		done <- command.Execute(ctx, []string{"--source-zookeeper=" + live.zk, "--target-zookeeper=" + analysis.zk,
			"--whitelist=pv.*|kafka-audit", "--num-streams=2", "--consumer-config=" + props, "--progress-interval=200ms"},
			cli.IO{Stdout: &out, Stderr: &errOut})
	}()
	a := newAuditor(t, analysis)
	var tot caudit.Row
	if !wait.Until(timeout, func() bool {
		var ok bool
		tot, ok = a.complete(n)
		return ok
	}) {
		t.Fatalf("not every audited message reached the analysis cluster: %+v\nmirror stdout:\n%s\nstderr:\n%s", tot, out.String(), errOut.String())
	}
	// A topic created while the mirror runs is mirrored too (the wildcard
	// subscription picks it up).
	auditedProducer(t, live, "pv-late", 50, nil)
	late := newAuditorOf(t, analysis, "pv-late")
	wait.Within(t, timeout, "the topic created later on the analysis cluster", func() bool {
		_, ok := late.complete(50)
		return ok
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("mirror: %v\n%s", err, errOut.String())
	}
	if tot.Duplicates != 0 || tot.Unannounced != 0 {
		t.Errorf("audit totals %+v: want no duplicates without a crash", tot)
	}
	if !strings.Contains(out.String(), "progress ") || !strings.Contains(out.String(), "lag source=") {
		t.Errorf("no progress or lag lines:\n%s", out.String())
	}
	if ok, _ := analysis.obs.Exists(zkcoord.TopicPath("secret")); ok {
		t.Error("topic secret was mirrored")
	}
	// Every message sits in the partition of the same index as on the
	// live cluster (one broker each, so the same partition number).
	where := func(c *cluster) map[string]wire.Partition {
		m := map[string]wire.Partition{}
		sc, err := consumer.NewSimpleConsumer(c.b.Addr, consumer.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		for p := wire.Partition(0); p < 2; p++ {
			for off := wire.Offset(0); ; {
				set, err := sc.Fetch(context.Background(), "pv", p, off, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				it := set.Iterator()
				k := 0
				for ; it.Next(); k++ {
					if h, _, err := audit.DecodeEnvelope(it.Payload()); err == nil {
						m[fmt.Sprint(h.Session, "/", h.Seq)] = p
					}
					off = it.NextOffset()
				}
				if k == 0 {
					break
				}
			}
		}
		return m
	}
	src, dst := where(live), where(analysis)
	if len(src) != n || len(dst) != n {
		t.Fatalf("%d messages on the live cluster, %d mirrored; want %d", len(src), len(dst), n)
	}
	moved := 0
	for k, p := range src {
		if dst[k] != p {
			moved++
		}
	}
	if moved != 0 {
		t.Errorf("%d of %d messages changed partition", moved, n)
	}
	// The clean stop committed everything: no lag.
	gcfg := group.DefaultConfig()
	gcfg.GroupID, gcfg.ZkConnect = "mirror-test", live.zk
	st, _, err := group.Status(context.Background(), gcfg, []string{"pv"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range st {
		if lag, ok := ps.Lag(); !ok || lag != 0 {
			t.Errorf("partition %s: lag %d (known %v) after a clean stop", ps.Partition, lag, ok)
		}
	}
}

// startMirror starts the test binary as kafka-mirror and returns it with a
// channel of its stdout lines.
func startMirror(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "MIRROR_HELPER=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut brokertest.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if testing.Verbose() {
			t.Logf("mirror pid %d stderr:\n%s", cmd.Process.Pid, errOut.String())
		}
	})
	return cmd
}

// TestMirrorSIGKILLLosesNothing: the mirror process is killed with SIGKILL
// while it copies, and restarted; the audit on the analysis cluster counts
// every message, none missing (duplicates allowed: what the killed mirror
// sent after its last commit is sent again).
func TestMirrorSIGKILLLosesNothing(t *testing.T) {
	live, analysis := startCluster(t), startCluster(t)
	const n = 3000
	args := []string{"--source-zookeeper=" + live.zk, "--target-zookeeper=" + analysis.zk, "--whitelist=.*",
		"--num-streams=2", "--progress-interval=0"}
	props := t.TempDir() + "/consumer.properties"
	// A long commit interval, so that the kill lands well after a commit.
	if err := os.WriteFile(props, []byte("groupid=mirror-kill\nfetcher.backoff.ms=20\nautocommit.interval.ms=300\nzk.sessiontimeout.ms=2000\nrebalance.backoff.ms=200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args = append(args, "--consumer-config="+props)
	m1 := startMirror(t, args...)
	a := newAuditor(t, analysis)
	var killed sync.Once
	received := func() int64 {
		a.complete(n)
		return caudit.Totals(a.n.Report()).Distinct
	}
	auditedProducer(t, live, "pv", n, func(i int) {
		if i >= n/2 {
			killed.Do(func() {
				// Kill once the mirror has copied some of what was sent.
				wait.Within(t, timeout, "the mirror copying", func() bool { return received() >= int64(n/10) })
				if err := m1.Process.Signal(syscall.SIGKILL); err != nil {
					t.Error(err)
				}
				m1.Wait()
			})
		}
	})
	got := received()
	if got >= n {
		t.Fatalf("the mirror had copied all %d messages before it was killed", got)
	}
	t.Logf("killed the mirror with %d of %d messages on the analysis cluster", got, n)
	m2 := startMirror(t, args...)
	var tot caudit.Row
	wait.Within(t, timeout, "every audited message on the analysis cluster after the restart", func() bool {
		var ok bool
		tot, ok = a.complete(n)
		return ok
	})
	t.Logf("audit after the restart: sent %d, received %d, missing %d, duplicates %d", tot.Sent, tot.Received, tot.Missing, tot.Duplicates)
	if tot.Missing != 0 || tot.Distinct != n {
		t.Fatalf("audit %+v: want all %d messages, none missing", tot, n)
	}
	// SIGTERM stops it cleanly: exit status 0, everything committed.
	if err := m2.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := m2.Wait(); err != nil {
		t.Fatalf("the mirror after SIGTERM: %v", err)
	}
	gcfg := group.DefaultConfig()
	gcfg.GroupID, gcfg.ZkConnect = "mirror-kill", live.zk
	st, _, err := group.Status(context.Background(), gcfg, []string{"pv"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range st {
		if lag, ok := ps.Lag(); !ok || lag != 0 {
			t.Errorf("partition %s: lag %d (known %v) after SIGTERM", ps.Partition, lag, ok)
		}
	}
}

// TestMirrorThroughput measures the README's number: 100,000 200-byte
// messages mirrored between two brokers on loopback with --num-streams=2,
// the rate read from the progress lines (every 50 ms: from the first line
// with a message mirrored to the first with all). It runs only with
// KAFKA_MIRROR_BENCH=1 (it takes tens of seconds).
func TestMirrorThroughput(t *testing.T) {
	if os.Getenv("KAFKA_MIRROR_BENCH") != "1" {
		t.Skip("set KAFKA_MIRROR_BENCH=1 to measure the mirror's throughput")
	}
	live, analysis := startCluster(t), startCluster(t)
	const n, size = 100_000, 200
	pcfg := producer.DefaultConfig()
	pcfg.ZkConnect = live.zk
	p, err := producer.New(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, size)
	for i := 0; i < n; i += 500 {
		var msgs []producer.Message
		for j := i; j < i+500; j++ {
			msgs = append(msgs, producer.Message{Key: []byte(fmt.Sprint(j)), Value: value})
		}
		if err := p.Send(context.Background(), "bench", msgs...); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	live.waitTopic(t, "bench")
	live.b.Flush(t)
	wcfg := producer.DefaultConfig()
	wcfg.BrokerList = fmt.Sprintf("1:%s", analysis.b.Addr)
	warm, err := producer.New(wcfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Send(context.Background(), "bench", producer.Message{Value: []byte("warm-up")}); err != nil {
		t.Fatal(err)
	}
	warm.Close()
	analysis.waitTopic(t, "bench")
	props := t.TempDir() + "/consumer.properties"
	if err := os.WriteFile(props, []byte("groupid=mirror-bench\nautocommit.interval.ms=1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut brokertest.Buffer
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- command.Execute(ctx, []string{"--source-zookeeper=" + live.zk, "--target-zookeeper=" + analysis.zk,
			"--whitelist=bench", "--num-streams=2", "--consumer-config=" + props, "--progress-interval=50ms"},
			cli.IO{Stdout: &out, Stderr: &errOut})
	}()
	wait.Within(t, 5*time.Minute, "every message mirrored", func() bool {
		return strings.Contains(out.String(), fmt.Sprintf("mirrored=%d ", n))
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("mirror: %v\n%s", err, errOut.String())
	}
	// The target has them all (at least their payloads' bytes).
	analysis.b.Flush(t)
	sc, err := consumer.NewSimpleConsumer(analysis.b.Addr, consumer.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var got wire.Offset
	for part := wire.Partition(0); part < 2; part++ {
		offs, err := sc.OffsetsBefore(context.Background(), "bench", part, -1, 1)
		if err != nil || len(offs) == 0 {
			t.Fatalf("partition %d: %v %v", part, offs, err)
		}
		got += offs[0]
	}
	if got < n*size {
		t.Fatalf("the target holds %d bytes of topic bench, fewer than %d messages of %d bytes", got, n, size)
	}
	// progress elapsed=E mirrored=M ...
	var t0, t1 float64
	var m0 int64 = -1
	for _, line := range strings.Split(out.String(), "\n") {
		var e float64
		var m int64
		if _, err := fmt.Sscanf(line, "progress elapsed=%fs mirrored=%d", &e, &m); err != nil {
			continue
		}
		if m > 0 && m0 < 0 {
			t0, m0 = e, m
		}
		if m == n {
			t1 = e
			break
		}
	}
	rate := 0.0
	if t1 > t0 {
		rate = float64(int64(n)-m0) / (t1 - t0)
	}
	t.Logf("mirrored %d messages of %d bytes in %.1fs: %.0f msg/s between the first progress line with a message (%.2fs, %d) and the one with all (%.2fs)",
		n, size, time.Since(start).Seconds(), rate, t0, m0, t1)
}

// holdingProxy forwards TCP connections to addr, passing the client's bytes
// at once and holding the server's until Release: the target appends what
// the mirror sends, but the mirror's confirmation round trip
// (confirm=send) gets no answer until then.
type holdingProxy struct {
	ln      net.Listener
	release chan struct{}
	once    sync.Once

	mu    sync.Mutex
	conns []net.Conn
}

func (hp *holdingProxy) Release() { hp.once.Do(func() { close(hp.release) }) }

func startHoldingProxy(t *testing.T, addr string) *holdingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hp := &holdingProxy{ln: ln, release: make(chan struct{})}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		hp.Release()
		hp.mu.Lock()
		for _, c := range hp.conns {
			c.Close()
		}
		hp.mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			hp.mu.Lock()
			hp.conns = append(hp.conns, c, s)
			hp.mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(s, c); s.Close() }()
			go func() {
				defer wg.Done()
				<-hp.release
				io.Copy(c, s)
				c.Close()
			}()
		}
	}()
	return hp
}

// TestMirrorCommitsOnlyConfirmedBatches: while the target has appended a
// batch but its confirmation is held back, the mirror's commits (every
// 50 ms here) cover none of the source's messages; once the confirmations
// pass, everything is committed. A mirror that commits what it has read
// (or marked) rather than what the target confirmed fails the first check.
func TestMirrorCommitsOnlyConfirmedBatches(t *testing.T) {
	live, analysis := startCluster(t), startCluster(t)
	const n = 1000
	pcfg := producer.DefaultConfig()
	pcfg.ZkConnect = live.zk
	p, err := producer.New(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []producer.Message
	for i := 0; i < n; i++ {
		msgs = append(msgs, producer.Message{Key: []byte(fmt.Sprint(i)), Value: fmt.Appendf(nil, "message %d", i)})
	}
	if err := p.Send(context.Background(), "pv", msgs...); err != nil {
		t.Fatal(err)
	}
	p.Close()
	live.waitTopic(t, "pv")
	live.b.Flush(t)

	proxy := startHoldingProxy(t, analysis.b.Addr)
	dir := t.TempDir()
	cprops, pprops := dir+"/consumer.properties", dir+"/producer.properties"
	if err := os.WriteFile(cprops, []byte("groupid=mirror-confirm\nfetcher.backoff.ms=20\nautocommit.interval.ms=50\nzk.sessiontimeout.ms=2000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pprops, []byte("batch.size=100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut brokertest.Buffer
	done := make(chan error, 1)
	go func() {
		done <- command.Execute(ctx, []string{"--source-zookeeper=" + live.zk, "--target-broker-list=1:" + proxy.ln.Addr().String(),
			"--whitelist=pv", "--num-streams=1", "--consumer-config=" + cprops, "--producer-config=" + pprops, "--progress-interval=0"},
			cli.IO{Stdout: &out, Stderr: &errOut})
	}()

	gcfg := group.DefaultConfig()
	gcfg.GroupID, gcfg.ZkConnect = "mirror-confirm", live.zk
	committed := func() (sum int64, logEnd int64) {
		st, _, err := group.Status(context.Background(), gcfg, []string{"pv"})
		if err != nil {
			t.Fatal(err)
		}
		for _, ps := range st {
			if ps.HasCommitted {
				sum += int64(ps.Committed)
			}
			logEnd += int64(ps.LogEnd)
		}
		return sum, logEnd
	}
	sc, err := consumer.NewSimpleConsumer(analysis.b.Addr, consumer.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	// The target appended the first batch (it is unconfirmed: the proxy
	// holds the answers).
	wait.Within(t, timeout, "the first batch on the target", func() bool {
		analysis.b.Flush(t)
		for part := wire.Partition(0); part < 2; part++ {
			offs, err := sc.OffsetsBefore(context.Background(), "pv", part, -1, 1)
			if err == nil && len(offs) > 0 && offs[0] > 0 {
				return true
			}
		}
		return false
	})
	// An observation window of 10 commit intervals, not a wait for an
	// event: nothing may be committed within it.
	if wait.Until(500*time.Millisecond, func() bool { sum, _ := committed(); return sum > 0 }) {
		sum, _ := committed()
		t.Fatalf("the mirror committed %d bytes of source offsets before the target confirmed anything", sum)
	}
	proxy.Release()
	wait.Within(t, timeout, "every message committed once confirmed", func() bool {
		sum, end := committed()
		return end > 0 && sum == end
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("mirror: %v\n%s", err, errOut.String())
	}
}
