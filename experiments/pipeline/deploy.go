package pipeline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/testbed"
	"github.com/netdb11/kafka/zkcoord"
	"golang.org/x/sys/unix"
)

// Ports inside each datacenter's host.
const (
	zkPort     = 2181
	brokerPort = 9092
	auditTopic = "kafka-audit"
)

// site is one datacenter: a testbed host, or a set of loopback ports.
type site struct {
	name   string
	host   kit.Host // this machine, or the testbed host of that name
	zkPort int
	bPort  int
	zk     *kit.Proc
	broker *kit.Proc
}

func (s *site) zkConnect() string { return net.JoinHostPort(s.host.Addr(), strconv.Itoa(s.zkPort)) }
func (s *site) brokerAddr() string {
	return net.JoinHostPort(s.host.Addr(), strconv.Itoa(s.bPort))
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
	procs    []*kit.Proc
	mirror   *kit.Proc
	mirrorN  int
}

// start starts exe on site s with its output in the logs directory as
// name.log (its standard output in stdout instead, when set); down stops it.
func (e *env) start(ctx context.Context, s *site, name string, stdout *os.File, exe string, args ...string) (*kit.Proc, error) {
	return e.startIn(ctx, s, name, nil, stdout, exe, args...)
}

// startIn is start with a standard input.
func (e *env) startIn(ctx context.Context, s *site, name string, stdin io.Reader, stdout *os.File, exe string, args ...string) (*kit.Proc, error) {
	out := kit.Output{Log: filepath.Join(e.logs, name+".log"), Stdin: stdin}
	if stdout != nil {
		out.Stdout = stdout
	}
	p, err := kit.Start(name, s.host.Command(context.WithoutCancel(ctx), append([]string{exe}, args...)...), out)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	e.keep(p)
	return p, nil
}

// keep adds p to the processes down stops.
func (e *env) keep(p *kit.Proc) {
	e.mu.Lock()
	e.procs = append(e.procs, p)
	e.mu.Unlock()
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
			h, err := kit.TestbedHost(e.tb, name)
			if err != nil {
				return "", err
			}
			s := &site{name: name, host: h, zkPort: zkPort, bPort: brokerPort}
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
		e.live = &site{name: "live", host: kit.Local("live"), zkPort: ports[0], bPort: ports[1]}
		e.analysis = &site{name: "analysis", host: kit.Local("analysis"), zkPort: ports[2], bPort: ports[3]}
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
		if err := p.Wait(); err != nil {
			return "", fmt.Errorf("pipeline: creating topic %s: %v (see %s)", t, err, p.LogPath())
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

// startZooKeeper starts s's standalone ZooKeeper and waits until it serves.
func (e *env) startZooKeeper(ctx context.Context, s *site) error {
	z := kit.ZooKeeper{Name: s.name + "'s ZooKeeper", Host: s.host, Port: s.zkPort,
		Dir: filepath.Join(e.cfg.Dir, s.name+"-zookeeper"), Log: filepath.Join(e.logs, s.name+"-zookeeper.log")}
	p, err := z.Start(ctx, 90*time.Second)
	if err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	e.keep(p)
	s.zk = p
	return nil
}

func (e *env) startBroker(ctx context.Context, s *site) error {
	c := e.cfg
	p, err := e.start(ctx, s, s.name+"-broker", nil, e.bin("kafka-server"),
		"--brokerid=1", "--hostname="+s.host.Addr(), "--port="+strconv.Itoa(s.bPort),
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
func (e *env) zkCheck(ctx context.Context, s *site, timeout time.Duration, what string, p *kit.Proc, cond func(*zkcoord.Conn) bool) error {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	conn, err := zkcoord.Dial(dctx, zkcoord.Config{Connect: s.zkConnect(), Logger: e.log,
		Dial: func(network, address string, timeout time.Duration) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			return s.host.Dial(ctx, address)
		}})
	cancel()
	if err != nil {
		return fmt.Errorf("pipeline: ZooKeeper of %s: %w", s.name, err)
	}
	defer conn.Close()
	var watched kit.Exiter // none while waiting for the topics
	if p != nil {
		watched = p
	}
	if err := kit.WaitFor(ctx, timeout, what, watched, func() bool { return cond(conn) }); err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	return nil
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
		_ = p.Stop(10 * time.Second) // the phases judge the run, not how it ended
	}
	if e.tb != nil {
		if err := e.tb.Down(); err != nil {
			e.log.Error("taking the two-datacenter testbed down", "err", err)
		}
	}
}
