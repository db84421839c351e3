package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/testbed"
)

// Host names on the testbed.
const (
	zkHost     = "zookeeper"
	clientHost = "client"
	brokerPort = 9092
	// replicaPort is the brokers' inter-broker listener (replica.port):
	// replica fetches and the controller's orders go there, so the
	// nemeses that cut replication block it beside the client port.
	replicaPort = 9093
	zkPort      = 2181
)

func brokerHost(id int) string { return "broker" + strconv.Itoa(id) }

// ClusterConfig describes one trial's cluster.
type ClusterConfig struct {
	Brokers int    // broker hosts, ids 1..Brokers
	Bin     string // directory holding kafka-server
	Dir     string // working directory: ZooKeeper's and the brokers' data, logs
	// Props are server.properties keys given to every broker (flags).
	Props map[string]string
	// SessionTimeout is zk.sessiontimeout.ms.
	SessionTimeout time.Duration
	// Admin, when set, has every broker serve its admin endpoint on its
	// host's adminPort (metrics.listen).
	Admin  bool
	Link   string // testbed link (default none: the faults, not the rate, matter)
	Logger *slog.Logger
	// Trace, when set, hears of what is made that Close must remove:
	// ("testbed", run id) once the namespaces exist, ("dir", the testbed's
	// state directory).
	Trace func(kind, name string)
	// Ensemble, when set, runs ZooKeeper as a three-server ensemble on
	// hosts zk1..zk3 (ensemble.go) instead of one server on zookeeper.
	Ensemble bool
}

// Cluster is a ZooKeeper host (or three: ClusterConfig.Ensemble), broker
// hosts and a client host on the testbed, with the processes the harness
// started in them.
type Cluster struct {
	cfg ClusterConfig
	tb  *testbed.Testbed
	log *slog.Logger

	mu      sync.Mutex
	zk      *kit.Proc
	ens     *kit.Ensemble // set once, before any process starts; nil standalone
	ensMu   sync.Mutex    // held while ensemble members are launched (launchZK)
	brokers map[int]*kit.Proc
	// startMu is held while a broker starts, and by a nemesis between
	// killing a broker and cutting its logs, so that overlapping faults
	// (compound) never restart a broker whose files are being cut, nor
	// start it twice.
	startMu sync.Mutex
	// shaped counts the faults that hold each host's port shaped (Shape,
	// Unshape): overlapping slow-kills share one qdisc, removed by the
	// last heal.
	shapeMu sync.Mutex
	shaped  map[string]int
	// firewalls counts the firewalls made, for their tags.
	firewalls atomic.Int64
}

// StartCluster brings up the testbed and starts ZooKeeper and the brokers.
// On failure everything it made is removed.
func StartCluster(ctx context.Context, cfg ClusterConfig) (c *Cluster, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Link == "" {
		cfg.Link = testbed.LinkNone
	}
	hosts := zkHosts(cfg.Ensemble)
	for i := 1; i <= cfg.Brokers; i++ {
		hosts = append(hosts, brokerHost(i))
	}
	hosts = append(hosts, clientHost)
	tb, err := testbed.Up(ctx, testbed.Options{Hosts: hosts, Link: cfg.Link, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	if cfg.Trace != nil {
		cfg.Trace("testbed", tb.ID())
		cfg.Trace("dir", tb.StateDir())
	}
	cl := &Cluster{cfg: cfg, tb: tb, log: cfg.Logger, brokers: map[int]*kit.Proc{}}
	// The returns below set c to nil on error; close what was made.
	defer func() {
		if err != nil {
			err = errors.Join(err, cl.Close())
		}
	}()
	c = cl
	if err := c.makeCerts(); err != nil {
		return nil, err
	}
	if cfg.Ensemble {
		if c.ens, err = c.newEnsemble(); err != nil {
			return nil, err
		}
	}
	if err := c.StartZooKeeper(ctx); err != nil {
		return nil, err
	}
	for i := 1; i <= cfg.Brokers; i++ {
		if err := c.StartBroker(ctx, i); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Testbed is the cluster's testbed.
func (c *Cluster) Testbed() *testbed.Testbed { return c.tb }

// Addr is the address of a host.
func (c *Cluster) Addr(host string) string {
	a, _ := c.tb.Addr(host)
	return a
}

// BrokerAddr is broker id's host:port.
func (c *Cluster) BrokerAddr(id int) string {
	return net.JoinHostPort(c.Addr(brokerHost(id)), strconv.Itoa(brokerPort))
}

// Dial connects to addr from the client host.
func (c *Cluster) Dial(ctx context.Context, addr string) (net.Conn, error) {
	h, err := c.tb.Host(clientHost)
	if err != nil {
		return nil, err
	}
	return testbed.DialIn(ctx, h.Netns, addr)
}

// BrokerDir is broker id's log.dir.
func (c *Cluster) BrokerDir(id int) string { return filepath.Join(c.cfg.Dir, brokerHost(id), "logs") }

// start starts name on host with its output appended to logName in the
// working directory (a restarted server's log continues the earlier one).
func (c *Cluster) start(ctx context.Context, host, logName string, name string, args ...string) (*kit.Proc, error) {
	if err := os.MkdirAll(c.cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	// Not tied to ctx: the nemeses and Close decide when it ends.
	cmd := c.tb.Command(context.WithoutCancel(ctx), host, name, args...)
	p, err := kit.Start(filepath.Base(name)+" on "+host, cmd, kit.Output{Log: filepath.Join(c.cfg.Dir, logName), Append: true})
	if err != nil {
		return nil, fmt.Errorf("faults: %w", err)
	}
	return p, nil
}

// StartZooKeeper starts a standalone ZooKeeper on the zookeeper host, on its
// data directory (kept across restarts), and waits until it serves; with the
// ensemble, every member not running, waiting until each serves.
func (c *Cluster) StartZooKeeper(ctx context.Context) error {
	if c.ens != nil {
		return c.startEnsemble(ctx)
	}
	c.mu.Lock()
	running := c.zk != nil && c.zk.Running()
	c.mu.Unlock()
	if running {
		return nil // healed already (overlapping faults)
	}
	h, err := kit.TestbedHost(c.tb, zkHost)
	if err != nil {
		return err
	}
	z := kit.ZooKeeper{Name: "zookeeper", Host: h, Port: zkPort, Dir: filepath.Join(c.cfg.Dir, zkHost), Log: filepath.Join(c.cfg.Dir, "zookeeper.log")}
	p, err := z.Start(ctx, 60*time.Second)
	if err != nil {
		return fmt.Errorf("faults: %w (see %s)", err, c.cfg.Dir)
	}
	c.mu.Lock()
	c.zk = p
	c.mu.Unlock()
	return nil
}

// StartBroker starts broker id on its host, on its log directory (kept
// across restarts), and waits until it accepts connections. A broker
// already running is left alone (overlapping faults heal it twice).
func (c *Cluster) StartBroker(ctx context.Context, id int) error {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	if c.Running(id) {
		return nil
	}
	host := brokerHost(id)
	args := []string{
		"--brokerid=" + strconv.Itoa(id),
		"--hostname=" + c.Addr(host),
		"--port=" + strconv.Itoa(brokerPort),
		"--replica.port=" + strconv.Itoa(replicaPort),
		"--ssl.keystore.location=" + c.keystore(id),
		"--ssl.truststore.location=" + c.truststore(),
		"--log.dir=" + c.BrokerDir(id),
		"--enable.zookeeper=true",
		"--zk.connect=" + c.ZKConnect(),
		"--zk.sessiontimeout.ms=" + strconv.FormatInt(c.cfg.SessionTimeout.Milliseconds(), 10),
	}
	for k, v := range c.cfg.Props {
		args = append(args, "--"+k+"="+v)
	}
	if c.cfg.Admin {
		args = append(args, "--metrics.listen="+net.JoinHostPort(c.Addr(host), strconv.Itoa(adminPort)))
	}
	exe := filepath.Join(c.cfg.Bin, "kafka-server")
	if _, err := os.Stat(exe); err != nil {
		return fmt.Errorf("faults: no kafka-server in %s (make build): %w", c.cfg.Bin, err)
	}
	p, err := c.start(ctx, host, host+".log", exe, args...)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.brokers[id] = p
	c.mu.Unlock()
	if err := kit.WaitFor(ctx, 30*time.Second, host+" accepting", p, func() bool {
		conn, err := c.Dial(ctx, c.BrokerAddr(id))
		if err != nil {
			return false
		}
		conn.Close()
		return true
	}); err != nil {
		return fmt.Errorf("faults: %w (see %s)", err, c.cfg.Dir)
	}
	return nil
}

// Broker returns broker id's process, or nil when it is not running.
func (c *Cluster) broker(id int) *kit.Proc {
	p := c.process(id)
	if p == nil || !p.Running() {
		return nil
	}
	return p
}

// process returns broker id's last started process, alive or not (nil
// if it never started).
func (c *Cluster) process(id int) *kit.Proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.brokers[id]
}

// Running reports whether broker id's process is alive (stopped or not).
func (c *Cluster) Running(id int) bool { return c.broker(id) != nil }

// Signal sends sig to broker id's process; a broker not running is
// nothing to strike (errNoTarget).
func (c *Cluster) Signal(id int, sig syscall.Signal) error {
	p := c.broker(id)
	if p == nil {
		return noTarget(fmt.Errorf("faults: broker %d is not running", id))
	}
	return p.Signal(sig)
}

// StopBroker ends broker id: SIGKILL (hard) or SIGTERM (clean), and waits
// for it to exit (a stopped process is continued first so it can die).
func (c *Cluster) StopBroker(ctx context.Context, id int, hard bool) error {
	p := c.broker(id)
	if p == nil {
		return nil
	}
	if hard {
		p.Kill()
	} else {
		_ = p.Stop(30 * time.Second) // how it ended is the trial's to judge
	}
	return nil
}

// StopZooKeeper kills ZooKeeper (SIGKILL: every member of the ensemble) and
// waits for it.
func (c *Cluster) StopZooKeeper(ctx context.Context) error {
	if c.ens != nil {
		for _, id := range c.ens.IDs() {
			c.ens.Kill(id)
		}
		return nil
	}
	c.mu.Lock()
	p := c.zk
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	p.Kill()
	return nil
}

// Shape limits what host receives to rate (tbf on its port of the
// testbed's switch), with a 200 ms queue. A host shaped already (an
// overlapping fault) stays as it is, and is counted: each Shape needs its
// Unshape, and the last one removes the limit.
func (c *Cluster) Shape(ctx context.Context, host, rate string) error {
	c.shapeMu.Lock()
	defer c.shapeMu.Unlock()
	if c.shaped[host] == 0 {
		if err := c.tc(ctx, "add", host, "tbf", "rate", rate, "burst", "16kb", "latency", "200ms"); err != nil {
			return err
		}
	}
	if c.shaped == nil {
		c.shaped = map[string]int{}
	}
	c.shaped[host]++
	return nil
}

// Unshape undoes one Shape of host; the last removes the limit. A host not
// shaped is left alone.
func (c *Cluster) Unshape(ctx context.Context, host string) error {
	c.shapeMu.Lock()
	defer c.shapeMu.Unlock()
	switch c.shaped[host] {
	case 0:
		return nil
	case 1:
		if err := c.tc(ctx, "del", host); err != nil {
			return err
		}
	}
	c.shaped[host]--
	return nil
}

func (c *Cluster) tc(ctx context.Context, op, host string, args ...string) error {
	sw := "tb-" + c.tb.ID() + "-sw"
	full := append([]string{"netns", "exec", sw, "tc", "qdisc", op, "dev", "p-" + host, "root"}, args...)
	out, err := exec.CommandContext(ctx, "ip", full...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("faults: tc qdisc %s on %s's port: %w: %s", op, host, err, out)
	}
	return nil
}

// Close stops every process and removes the testbed (namespaces, links,
// cgroups, and with them the iptables rules) and the working directory's
// data (the logs stay for the report). Safe to call more than once.
func (c *Cluster) Close() error {
	c.mu.Lock()
	var ps []*kit.Proc
	for _, p := range c.brokers {
		ps = append(ps, p)
	}
	if c.zk != nil {
		ps = append(ps, c.zk)
	}
	c.mu.Unlock()
	for _, p := range ps {
		p.Kill()
	}
	if c.ens != nil {
		c.ens.Close()
	}
	var err error
	if c.tb != nil {
		err = c.tb.Down()
		c.tb = nil
	}
	return err
}
