// Package pipeline runs paper §4's deployment on the emulated testbed: a
// live datacenter whose front-end servers produce into its own cluster, and
// an analysis datacenter whose cluster pulls the data across with
// kafka-mirror (0.7's MirrorMaker, the paper's embedded consumers) and
// feeds a consumer, each datacenter with its own ZooKeeper, as LinkedIn ran
// it. Under a steady load it measures the end-to-end latency over time and
// where it goes (the producer's queue, the live cluster's flush, the mirror,
// the consumer's backoff) beside the paper's "about 10 seconds", and the
// audit's verdict per window; then the same with the mirror SIGKILLed and
// restarted midway, where the audit must show duplicates and never loss.
//
// Deviation: each datacenter is one host of scripts/testbed.sh twodc (a
// network namespace pinned to a core) rather than many machines, and the
// link between them is shaped with tbf but adds no delay: netem, which
// would emulate a WAN's latency, is missing from this kernel. Without
// root (or with Config.Local) everything runs on this machine's loopback
// instead, which the result says.
package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	caudit "github.com/netdb11/kafka/consumer/audit"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/testbed"
	"github.com/netdb11/kafka/zkcoord"
	"golang.org/x/sys/unix"
)

// Config configures a run. DefaultConfig gives the quick run.
type Config struct {
	// Bin holds kafka-server, kafka-mirror, kafka-audit,
	// kafka-audit-producer and kafka-console-producer.
	Bin string
	// Dir is the work directory (data and logs); Logs, when set, receives
	// every process's output instead of Dir/logs.
	Dir, Logs string
	// Script is scripts/testbed.sh ("" finds it).
	Script string
	// Local runs on loopback without namespaces.
	Local bool
	// WAN is the inter-datacenter link's rate (tbf), e.g. "100mbit".
	WAN string
	// Phase is how long each phase's load runs.
	Phase time.Duration
	// Producers front-end servers each send Rate messages/s of MessageSize
	// bytes, queued as 0.7's async producer (BatchSize, QueueTime).
	Producers   int
	Rate        float64
	MessageSize int
	BatchSize   int
	QueueTime   time.Duration
	// Window is the audit's window.
	Window time.Duration
	// FlushInterval, FlushIntervalTime and FlushScheduler are both
	// clusters' log.flush.interval, log.default.flush.interval.ms and
	// log.default.flush.scheduler.interval.ms.
	FlushInterval                     int
	FlushIntervalTime, FlushScheduler time.Duration
	// ConsumerBackoff is fetcher.backoff.ms of the mirror's consumers and
	// the analysis consumer's pause when it finds nothing new.
	ConsumerBackoff time.Duration
	// CommitInterval is the mirror's autocommit.interval.ms.
	CommitInterval time.Duration
	// KillAt is when, into the second phase, the mirror is SIGKILLed, and
	// Downtime how long it stays down.
	KillAt, Downtime time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
}

// DefaultConfig is the quick run with Kafka 0.7's defaults where they
// shape the latency ("without too much tuning", as the paper says):
// queue.time 5 s and batch.size 200, log.flush.interval 500 messages or
// 3 s checked every 3 s, fetcher.backoff.ms 1 s, autocommit every 10 s.
func DefaultConfig() Config {
	return Config{
		WAN: "100mbit", Phase: 60 * time.Second,
		Producers: 2, Rate: 100, MessageSize: 200, BatchSize: 200, QueueTime: 5 * time.Second,
		Window:        5 * time.Second,
		FlushInterval: 500, FlushIntervalTime: 3 * time.Second, FlushScheduler: 3 * time.Second,
		ConsumerBackoff: time.Second, CommitInterval: 10 * time.Second,
		KillAt: 25 * time.Second, Downtime: 10 * time.Second,
	}
}

// Ports inside each datacenter's host.
const (
	zkPort     = 2181
	brokerPort = 9092
	auditTopic = "kafka-audit"
)

// site is one datacenter: a testbed host, or a set of loopback ports.
type site struct {
	name   string
	addr   string
	netns  string // "" when local
	zkPort int
	bPort  int
	zk     *proc
	broker *proc
}

func (s *site) zkConnect() string { return net.JoinHostPort(s.addr, strconv.Itoa(s.zkPort)) }
func (s *site) brokerAddr() string {
	return net.JoinHostPort(s.addr, strconv.Itoa(s.bPort))
}

// env is a running two-datacenter deployment.
type env struct {
	cfg      Config
	log      *slog.Logger
	tb       *testbed.Testbed
	live     *site
	analysis *site
	logs     string
	mu       sync.Mutex
	procs    []*proc
	mirror   *proc
	mirrorN  int
}

// proc is a started process.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *os.File
	done chan struct{}
	err  error
}

func (e *env) start(ctx context.Context, s *site, name string, stdout *os.File, exe string, args ...string) (*proc, error) {
	return e.startIn(ctx, s, name, nil, stdout, exe, args...)
}

// startIn is start with a standard input.
func (e *env) startIn(ctx context.Context, s *site, name string, stdin io.Reader, stdout *os.File, exe string, args ...string) (*proc, error) {
	logf, err := os.Create(filepath.Join(e.logs, name+".log"))
	if err != nil {
		return nil, err
	}
	var cmd *exec.Cmd
	if e.tb != nil {
		cmd = e.tb.Command(context.WithoutCancel(ctx), s.name, exe, args...)
	} else {
		cmd = exec.Command(exe, args...)
	}
	cmd.Stdout, cmd.Stderr, cmd.Stdin = logf, logf, stdin
	if stdout != nil {
		cmd.Stdout = stdout
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("pipeline: start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, out: logf, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	e.mu.Lock()
	e.procs = append(e.procs, p)
	e.mu.Unlock()
	return p, nil
}

// signal sends sig to the process (the command itself: testbed.sh exec
// execs it).
func (p *proc) signal(sig syscall.Signal) {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits up to timeout, then SIGKILLs.
func (p *proc) stop(timeout time.Duration) {
	if p.exited() {
		return
	}
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.signal(syscall.SIGKILL)
		<-p.done
	}
}

// waitFor polls cond every 100 ms until it holds, p exits, or timeout.
func waitFor(ctx context.Context, timeout time.Duration, what string, p *proc, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if cond() {
			return nil
		}
		if p != nil && p.exited() {
			return fmt.Errorf("pipeline: %s exited while waiting for %s: %v (see %s)", p.name, what, p.err, p.out.Name())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pipeline: waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

// Run brings the two datacenters up, runs both phases and takes everything
// down again, whatever happens.
func Run(ctx context.Context, cfg Config) (res *results.Pipeline, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	for _, b := range []string{"kafka-server", "kafka-mirror", "kafka-audit", "kafka-audit-producer", "kafka-console-producer"} {
		if _, err := os.Stat(filepath.Join(cfg.Bin, b)); err != nil {
			return nil, fmt.Errorf("pipeline: no %s in %s (make build): %w", b, cfg.Bin, err)
		}
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	e := &env{cfg: cfg, log: cfg.Logger, logs: cfg.Logs}
	if e.logs == "" {
		e.logs = filepath.Join(cfg.Dir, "logs")
	}
	if err := os.MkdirAll(e.logs, 0o755); err != nil {
		return nil, err
	}
	defer e.down()
	desc, err := e.up(ctx)
	if err != nil {
		return nil, err
	}
	res = &results.Pipeline{Testbed: desc, Config: e.describe()}
	for _, ph := range []struct {
		name, topic string
		kill        bool
	}{{"steady", "pageviews-steady", false}, {"mirror SIGKILLed and restarted", "pageviews-kill", true}} {
		p, err := e.phase(ctx, ph.name, ph.topic, ph.kill)
		if err != nil {
			p.Error = err.Error()
			e.log.Error("pipeline phase failed", "phase", ph.name, "err", err)
		}
		res.Phases = append(res.Phases, p)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
	return res, nil
}

func (e *env) describe() map[string]string { return e.cfg.describeFor() }

// describeFor lists the settings that shape the latency.
func (c Config) describeFor() map[string]string {
	return map[string]string{
		"producers":                     strconv.Itoa(c.Producers),
		"rate_per_producer":             strconv.FormatFloat(c.Rate, 'f', -1, 64),
		"message_size":                  strconv.Itoa(c.MessageSize),
		"batch.size":                    strconv.Itoa(c.BatchSize),
		"queue.time":                    c.QueueTime.String(),
		"audit_window":                  c.Window.String(),
		"log.flush.interval":            strconv.Itoa(c.FlushInterval),
		"log.default.flush.interval.ms": strconv.FormatInt(c.FlushIntervalTime.Milliseconds(), 10),
		"log.default.flush.scheduler.interval.ms": strconv.FormatInt(c.FlushScheduler.Milliseconds(), 10),
		"fetcher.backoff.ms":                      strconv.FormatInt(c.ConsumerBackoff.Milliseconds(), 10),
		"autocommit.interval.ms":                  strconv.FormatInt(c.CommitInterval.Milliseconds(), 10),
		"num.partitions":                          "2",
		"mirror_streams":                          "2",
		"phase":                                   c.Phase.String(),
		"kill_at":                                 c.KillAt.String(),
		"downtime":                                c.Downtime.String(),
		"wan":                                     c.WAN,
	}
}

// up starts the testbed (or picks loopback ports), a ZooKeeper and a broker
// per datacenter, creates the topics and starts the mirror.
func (e *env) up(ctx context.Context) (string, error) {
	var desc string
	if !e.cfg.Local && os.Geteuid() == 0 {
		tb, err := testbed.Up(ctx, testbed.Options{Hosts: []string{"live", "analysis"}, Link: testbed.LinkNone,
			CPUs: twoCores(), Script: e.cfg.Script, Logger: e.log})
		if err == nil {
			e.tb = tb
			if err := tb.ShapeTwoDC(ctx, e.cfg.WAN); err != nil {
				return "", err
			}
		} else {
			e.log.Warn("two-datacenter testbed not available; running on loopback", "err", err)
		}
	}
	if e.tb != nil {
		for _, name := range []string{"live", "analysis"} {
			h, err := e.tb.Host(name)
			if err != nil {
				return "", err
			}
			s := &site{name: name, addr: h.Addr, netns: h.Netns, zkPort: zkPort, bPort: brokerPort}
			if name == "live" {
				e.live = s
			} else {
				e.analysis = s
			}
		}
		lh, _ := e.tb.Host("live")
		ah, _ := e.tb.Host("analysis")
		desc = fmt.Sprintf("two datacenters on the emulated testbed (scripts/testbed.sh twodc): host live (core %d: its ZooKeeper, broker and %d front-end producers) and host analysis (core %d: its ZooKeeper, broker, kafka-mirror and the consumer), network namespaces joined by one veth link shaped with tbf to %s in each direction; no added delay, since netem is missing from this kernel",
			lh.CPU, e.cfg.Producers, ah.CPU, e.cfg.WAN)
	} else {
		ports := make([]int, 4)
		for i := range ports {
			l, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				return "", err
			}
			ports[i] = l.Addr().(*net.TCPAddr).Port
			l.Close()
		}
		e.live = &site{name: "live", addr: "127.0.0.1", zkPort: ports[0], bPort: ports[1]}
		e.analysis = &site{name: "analysis", addr: "127.0.0.1", zkPort: ports[2], bPort: ports[3]}
		desc = "one machine, without namespaces (fallback: no root or no testbed): both datacenters' ZooKeepers, brokers and clients on 127.0.0.1, so the link between them is loopback, unshaped"
	}
	for _, s := range []*site{e.live, e.analysis} {
		if err := e.startZooKeeper(ctx, s); err != nil {
			return "", err
		}
	}
	for _, s := range []*site{e.live, e.analysis} {
		if err := e.startBroker(ctx, s); err != nil {
			return "", err
		}
	}
	// Create the topics (two partitions) with an unaudited message each,
	// so that the mirror subscribes to them from the start.
	for _, t := range []string{"pageviews-steady", "pageviews-kill"} {
		p, err := e.startIn(ctx, e.live, "create-"+t, strings.NewReader("topic created (not audited)\n"), nil,
			e.bin("kafka-console-producer"), "--broker-list=1:"+e.live.brokerAddr(), "--topic="+t, "--sync")
		if err != nil {
			return "", err
		}
		<-p.done
		if p.err != nil {
			return "", fmt.Errorf("pipeline: creating topic %s: %v (see %s)", t, p.err, p.out.Name())
		}
	}
	if err := e.waitTopics(ctx, e.live, "pageviews-steady", "pageviews-kill"); err != nil {
		return "", err
	}
	if err := e.startMirror(ctx); err != nil {
		return "", err
	}
	// The measurement starts once the mirror owns every partition.
	return desc, e.zkCheck(ctx, e.live, 90*time.Second, "the mirror owning every partition", e.mirror, func(conn *zkcoord.Conn) bool {
		for _, t := range []string{"pageviews-steady", "pageviews-kill"} {
			owners, err := conn.Children(zkcoord.OwnersPath("mirror", t))
			if err != nil || len(owners) != 2 {
				return false
			}
		}
		return true
	})
}

// twoCores puts the live datacenter on the first core this process may use
// and the analysis datacenter on the second.
func twoCores() map[string]int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for i := 0; i < 1024 && len(cpus) < 2; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) < 2 {
		return nil
	}
	return map[string]int{"live": cpus[0], "analysis": cpus[1]}
}

func (e *env) bin(name string) string { return filepath.Join(e.cfg.Bin, name) }

func (e *env) startZooKeeper(ctx context.Context, s *site) error {
	dir := filepath.Join(e.cfg.Dir, s.name+"-zookeeper")
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return err
	}
	cfgPath := filepath.Join(dir, "zoo.cfg")
	// Deviation: a 500 ms tick, as scripts/zookeeper.sh.
	zooCfg := fmt.Sprintf("tickTime=500\ndataDir=%s\nclientPort=%d\nclientPortAddress=%s\nminSessionTimeout=1000\nmaxSessionTimeout=60000\nmaxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=srvr,ruok\n",
		filepath.Join(dir, "data"), s.zkPort, s.addr)
	if err := os.WriteFile(cfgPath, []byte(zooCfg), 0o644); err != nil {
		return err
	}
	cp := "/usr/share/java/zookeeper.jar"
	if _, err := os.Stat(cp); err != nil {
		return fmt.Errorf("pipeline: ZooKeeper not installed (%w); scripts/zookeeper.sh start installs Debian's package", err)
	}
	if _, err := os.Stat("/usr/share/java/slf4j-simple.jar"); err == nil {
		cp += ":/usr/share/java/slf4j-simple.jar"
	}
	p, err := e.start(ctx, s, s.name+"-zookeeper", nil, "java", "-Xmx256m", "-XX:+UseSerialGC", "-Djava.net.preferIPv4Stack=true",
		"-Dzookeeper.admin.enableServer=false", "-cp", cp, "org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath)
	if err != nil {
		return err
	}
	s.zk = p
	return waitFor(ctx, 90*time.Second, s.name+"'s ZooKeeper serving", p, func() bool {
		c, err := s.dial(ctx, s.zkConnect(), 2*time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("srvr")); err != nil {
			return false
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(c)
		return strings.Contains(b.String(), "Mode: standalone")
	})
}

func (e *env) startBroker(ctx context.Context, s *site) error {
	c := e.cfg
	p, err := e.start(ctx, s, s.name+"-broker", nil, e.bin("kafka-server"),
		"--brokerid=1", "--hostname="+s.addr, "--port="+strconv.Itoa(s.bPort),
		"--log.dir="+filepath.Join(e.cfg.Dir, s.name+"-broker"),
		"--enable.zookeeper=true", "--zk.connect="+s.zkConnect(),
		"--num.partitions=2",
		"--log.flush.interval="+strconv.Itoa(c.FlushInterval),
		"--log.default.flush.interval.ms="+strconv.FormatInt(c.FlushIntervalTime.Milliseconds(), 10),
		"--log.default.flush.scheduler.interval.ms="+strconv.FormatInt(c.FlushScheduler.Milliseconds(), 10))
	if err != nil {
		return err
	}
	s.broker = p
	return e.zkCheck(ctx, s, 60*time.Second, s.name+"'s broker registered", p, func(conn *zkcoord.Conn) bool {
		ok, err := conn.Exists(zkcoord.BrokerPath(1))
		return err == nil && ok
	})
}

// zkCheck polls cond on a ZooKeeper session of the site's cluster.
func (e *env) zkCheck(ctx context.Context, s *site, timeout time.Duration, what string, p *proc, cond func(*zkcoord.Conn) bool) error {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	conn, err := zkcoord.Dial(dctx, zkcoord.Config{Connect: s.zkConnect(), Logger: e.log,
		Dial: func(network, address string, timeout time.Duration) (net.Conn, error) {
			return s.dial(context.Background(), address, timeout)
		}})
	cancel()
	if err != nil {
		return fmt.Errorf("pipeline: ZooKeeper of %s: %w", s.name, err)
	}
	defer conn.Close()
	return waitFor(ctx, timeout, what, p, func() bool { return cond(conn) })
}

func (e *env) waitTopics(ctx context.Context, s *site, topics ...string) error {
	return e.zkCheck(ctx, s, 60*time.Second, "topics registered on "+s.name, nil, func(conn *zkcoord.Conn) bool {
		for _, t := range topics {
			v, ok, err := conn.GetMaybe(zkcoord.TopicBrokerPath(t, 1))
			if err != nil || !ok || string(v) != "2" {
				return false
			}
		}
		return true
	})
}

// startMirror starts kafka-mirror in the analysis datacenter.
func (e *env) startMirror(ctx context.Context) error {
	props := filepath.Join(e.cfg.Dir, "mirror-consumer.properties")
	body := fmt.Sprintf("groupid=mirror\nfetcher.backoff.ms=%d\nautocommit.interval.ms=%d\nzk.sessiontimeout.ms=6000\n",
		e.cfg.ConsumerBackoff.Milliseconds(), e.cfg.CommitInterval.Milliseconds())
	if err := os.WriteFile(props, []byte(body), 0o644); err != nil {
		return err
	}
	e.mirrorN++
	p, err := e.start(ctx, e.analysis, fmt.Sprintf("mirror-%d", e.mirrorN), nil, e.bin("kafka-mirror"),
		"--source-zookeeper="+e.live.zkConnect(), "--target-zookeeper="+e.analysis.zkConnect(),
		"--whitelist=pageviews-.*|"+auditTopic, "--num-streams=2", "--consumer-config="+props,
		"--progress-interval=5s")
	if err != nil {
		return err
	}
	e.mirror = p
	return nil
}

// down stops every process (SIGTERM, then SIGKILL) and takes the testbed down.
func (e *env) down() {
	e.mu.Lock()
	procs := slices.Clone(e.procs)
	e.mu.Unlock()
	slices.Reverse(procs)
	for _, p := range procs {
		p.stop(10 * time.Second)
	}
	if e.tb != nil {
		if err := e.tb.Down(); err != nil {
			e.log.Error("taking the two-datacenter testbed down", "err", err)
		}
	}
}

// loadSummary is kafka-audit-producer's --json summary.
type loadSummary struct {
	Sent    int64 `json:"sent"`
	Windows []struct {
		Unix        float64 `json:"window_unix"`
		Messages    int64   `json:"messages"`
		QueueMeanms float64 `json:"queue_mean_ms"`
	} `json:"windows"`
}

func readRows(path string) (map[float64]caudit.JSONRow, caudit.JSONRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, caudit.JSONRow{}, err
	}
	defer f.Close()
	rows := map[float64]caudit.JSONRow{}
	var total caudit.JSONRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r caudit.JSONRow
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		switch r.Type {
		case "window":
			if r.LengthS > 0 {
				rows[r.WindowUnix] = r
			}
		case "total":
			total = r
		}
	}
	return rows, total, sc.Err()
}

// observer starts kafka-audit --follow on a site, polling every poll,
// printing everything when stopped.
func (e *env) observer(ctx context.Context, s *site, name, topic string, poll time.Duration) (*proc, string, error) {
	path := filepath.Join(e.cfg.Dir, name+".json")
	f, err := os.Create(path)
	if err != nil {
		return nil, "", err
	}
	p, err := e.start(ctx, s, name, f, e.bin("kafka-audit"), "--zookeeper="+s.zkConnect(), "--whitelist="+topic, "--topic="+topic,
		"--follow", "--json", "--poll="+poll.String(), "--interval=1h", "--grace=24h")
	f.Close()
	return p, path, err
}

// phase runs one phase: observers, producers, (the kill), the drain, the
// final audit; and merges what they printed into windows.
func (e *env) phase(ctx context.Context, name, topic string, kill bool) (results.PipelinePhase, error) {
	ph := results.PipelinePhase{Name: name, Topic: topic}
	c := e.cfg
	obsLive, liveOut, err := e.observer(ctx, e.live, "observer-live-"+topic, topic, 10*time.Millisecond)
	if err != nil {
		return ph, err
	}
	obsAna, anaOut, err := e.observer(ctx, e.analysis, "observer-analysis-"+topic, topic, 10*time.Millisecond)
	if err != nil {
		return ph, err
	}
	cons, consOut, err := e.observer(ctx, e.analysis, "consumer-"+topic, topic, c.ConsumerBackoff)
	if err != nil {
		return ph, err
	}
	observers := []*proc{obsLive, obsAna, cons}
	defer func() {
		for _, o := range observers {
			o.stop(30 * time.Second)
		}
	}()
	ph.Started = time.Now()
	ph.Load = "start " + LoadAverage()
	var loads []*proc
	var loadOuts []string
	for i := 1; i <= c.Producers; i++ {
		path := filepath.Join(e.cfg.Dir, fmt.Sprintf("producer-%s-%d.json", topic, i))
		f, err := os.Create(path)
		if err != nil {
			return ph, err
		}
		p, err := e.start(ctx, e.live, fmt.Sprintf("producer-%s-%d", topic, i), f, e.bin("kafka-audit-producer"),
			"--zookeeper="+e.live.zkConnect(), "--topic="+topic, "--rate="+strconv.FormatFloat(c.Rate, 'f', -1, 64),
			"--duration="+c.Phase.String(), "--message-size="+strconv.Itoa(c.MessageSize),
			"--batch-size="+strconv.Itoa(c.BatchSize), "--queue-time="+c.QueueTime.String(),
			"--audit-window="+c.Window.String(), fmt.Sprintf("--host=fe-%d", i), "--json")
		f.Close()
		if err != nil {
			return ph, err
		}
		loads = append(loads, p)
		loadOuts = append(loadOuts, path)
	}
	if kill {
		select {
		case <-ctx.Done():
			return ph, ctx.Err()
		case <-time.After(c.KillAt):
		}
		e.mirror.signal(syscall.SIGKILL)
		<-e.mirror.done
		ph.KilledAt = time.Since(ph.Started).Seconds()
		e.log.Info("mirror SIGKILLed", "at", ph.KilledAt)
		select {
		case <-ctx.Done():
			return ph, ctx.Err()
		case <-time.After(c.Downtime):
		}
		if err := e.startMirror(ctx); err != nil {
			return ph, err
		}
		ph.RestartedAt = time.Since(ph.Started).Seconds()
	}
	var sent int64
	var sums []loadSummary
	for i, p := range loads {
		<-p.done
		if p.err != nil {
			return ph, fmt.Errorf("pipeline: %s: %v (see %s)", p.name, p.err, p.out.Name())
		}
		b, err := os.ReadFile(loadOuts[i])
		if err != nil {
			return ph, err
		}
		var s loadSummary
		if err := json.Unmarshal(bytes.TrimSpace(b), &s); err != nil {
			return ph, fmt.Errorf("pipeline: %s's summary: %w", p.name, err)
		}
		sent += s.Sent
		sums = append(sums, s)
	}
	ph.Seconds = time.Since(ph.Started).Seconds()
	ph.Load += ", end " + LoadAverage()
	// Drain: until the audit at the analysis cluster counts every message.
	finalOut := filepath.Join(e.cfg.Dir, "audit-"+topic+".json")
	deadline := time.Now().Add(3 * time.Minute)
	for {
		f, err := os.Create(finalOut)
		if err != nil {
			return ph, err
		}
		p, err := e.start(ctx, e.analysis, "audit-"+topic, f, e.bin("kafka-audit"), "--zookeeper="+e.analysis.zkConnect(), "--whitelist="+topic, "--topic="+topic, "--json")
		f.Close()
		if err != nil {
			return ph, err
		}
		<-p.done
		_, total, rerr := readRows(finalOut)
		if rerr == nil && total.Sent == sent && total.Missing == 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			e.log.Warn("the analysis cluster did not catch up", "topic", topic, "sent", sent, "audit", total)
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	for _, o := range observers {
		o.stop(60 * time.Second)
	}
	final, total, err := readRows(finalOut)
	if err != nil {
		return ph, err
	}
	endToEnd, e2eTotal, err := readRows(consOut)
	if err != nil {
		return ph, err
	}
	live, _, err := readRows(liveOut)
	if err != nil {
		return ph, err
	}
	ana, _, err := readRows(anaOut)
	if err != nil {
		return ph, err
	}
	queued := map[float64][2]float64{} // window -> (sum of queue ms, messages)
	for _, s := range sums {
		for _, w := range s.Windows {
			q := queued[w.Unix]
			q[0] += w.QueueMeanms * float64(w.Messages)
			q[1] += float64(w.Messages)
			queued[w.Unix] = q
		}
	}
	var keys []float64
	for k := range final {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	start := float64(ph.Started.UnixNano()) / 1e9
	var tq, tl, ta, tn float64
	for _, k := range keys {
		f, x := final[k], endToEnd[k]
		w := results.PipelineWindow{At: k - start, Tally: f.Tally, LatencyMs: x.LatencyMs,
			LiveMs: live[k].MeanMs, AnalysisMs: ana[k].MeanMs}
		if q := queued[k]; q[1] > 0 {
			w.QueuedMs = q[0] / q[1]
		}
		ph.Windows = append(ph.Windows, w)
		n := float64(f.Sent)
		tq, tl, ta, tn = tq+w.QueuedMs*n, tl+w.LiveMs*n, ta+w.AnalysisMs*n, tn+n
	}
	ph.Total = results.PipelineWindow{Tally: total.Tally, LatencyMs: e2eTotal.LatencyMs}
	if tn > 0 {
		ph.Total.QueuedMs, ph.Total.LiveMs, ph.Total.AnalysisMs = tq/tn, tl/tn, ta/tn
	}
	if total.Sent != sent {
		return ph, fmt.Errorf("pipeline: the producers sent %d messages, the audit's events announce %d", sent, total.Sent)
	}
	return ph, nil
}

// LoadAverage reads /proc/loadavg's first three fields.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
