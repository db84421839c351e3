package experiments

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/netdb11/kafka/experiments/activemqperf"
	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/results"
)

// peer is an ActiveMQ or RabbitMQ of the comparison: the install step
// installs it, the compile step builds ActiveMQ's driver, the start step
// starts it, and the steps between it and the stop step use it.
type peer struct {
	name results.System
	// amq is ActiveMQ's compiled JMS driver (nil for RabbitMQ).
	amq *activemqperf.Driver
	// srv is the running peer; nil before the start step has succeeded.
	srv  kit.Server
	dir  string
	host kit.Host
	port int
	// dataDir is where the peer stores messages: KahaDB's journal and index, or
	// RabbitMQ's Mnesia directory with its queue indexes and message stores.
	dataDir string
	// quiet is how long the data directory must stay unchanged before its size
	// is taken as final.
	quiet time.Duration
}

// peerEnv assigns ports: on loopback free ones, so a run never collides with
// another broker (or epmd) on this machine; on the testbed the defaults inside the
// broker host's own namespace.
func (l *lab) peerEnv(name results.System) (env []string, port int, err error) {
	env = []string{"PEERS_BIND=" + l.tb.Broker.Addr()}
	if l.tb.Kind == kit.Paper {
		if name == results.ActiveMQ {
			return env, 61616, nil
		}
		return env, 5672, nil
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = freePort(l.tb); err != nil {
			return nil, 0, err
		}
	}
	if name == results.ActiveMQ {
		return append(env, "ACTIVEMQ_PORT="+strconv.Itoa(ports[0])), ports[0], nil
	}
	return append(env,
		"RABBITMQ_PORT="+strconv.Itoa(ports[0]),
		"RABBITMQ_EPMD_PORT="+strconv.Itoa(ports[1]),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(ports[2]),
	), ports[0], nil
}

// peerDir is where a peer keeps its state during the run.
func (l *lab) peerDir(name results.System) string { return filepath.Join(l.work, string(name)) }

// peerSpecOf is the runtime's description of the peer name.
func (l *lab) peerSpecOf(name results.System, env []string) kit.PeerSpec {
	dir := l.peerDir(name)
	pidFile := filepath.Join(dir, "beam.pid")
	if name == results.ActiveMQ {
		pidFile = filepath.Join(dir, "pid")
	}
	return kit.PeerSpec{Name: name, Host: l.tb.Broker, Dir: dir, Env: env, PIDFile: pidFile}
}

// installPeer installs a peer's Debian package (and, for ActiveMQ, a JDK) when
// missing. It runs before anything that needs the package's files: the
// ActiveMQ driver compiles against the package's client jars.
func (l *lab) installPeer(ctx context.Context, p *peer) error {
	return l.rt.InstallPeer(ctx, l.peerSpecOf(p.name, nil))
}

// compileActiveMQ builds ActiveMQ's JMS driver.
func (l *lab) compileActiveMQ(ctx context.Context, p *peer) (err error) {
	p.amq, err = l.compileJMS(ctx, filepath.Join(l.work, "activemq-driver"))
	return err
}

// startPeer starts an installed peer with its state under the work directory.
func (l *lab) startPeer(ctx context.Context, p *peer) error {
	dir := l.peerDir(p.name)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	env, port, err := l.peerEnv(p.name)
	if err != nil {
		return err
	}
	srv, err := l.rt.StartPeer(ctx, l.peerSpecOf(p.name, env))
	if err != nil {
		return err
	}
	l.cleanups.Add(func() {
		if err := srv.Stop(peerStopTimeout); err != nil {
			l.log.Warn("stopping peer", "peer", p.name, "err", err)
		}
	})
	l.log.Info("peer started", "peer", p.name)
	p.srv, p.dir, p.host, p.port = srv, dir, l.tb.Broker, port
	switch p.name {
	case results.ActiveMQ:
		// Longer than KahaDB's 5 s index checkpoint interval.
		p.dataDir, p.quiet = filepath.Join(dir, "data", "kahadb"), 6*time.Second
	default:
		p.dataDir, p.quiet = filepath.Join(dir, "data"), 2*time.Second
	}
	return nil
}

// peerStopTimeout bounds stopping a peer: scripts/peers.sh stop waits for the
// peer's processes to end.
const peerStopTimeout = 5 * time.Minute

// stopPeer stops a peer (and RabbitMQ's epmd); one that never started is left
// alone.
func (l *lab) stopPeer(p *peer) error {
	if p.srv == nil {
		return nil
	}
	return p.srv.Stop(peerStopTimeout)
}

// peerSpec is one peer driver run.
type peerSpec struct {
	mode     string // produce, consume, reset
	messages int64
	txSize   int
}

// peerDriver returns the command line of the peer's own-client driver.
func (l *lab) peerDriver(p *peer, spec peerSpec) ([]string, map[string]string, error) {
	cfg := map[string]string{
		"mode": spec.mode, "messages": strconv.FormatInt(spec.messages, 10),
		"message_size": strconv.Itoa(l.cfg.MessageSize), "queue": "perf (durable)", "delivery": "persistent",
		"time_cap": l.cfg.PeerTimeCap.String(), "prefetch": strconv.Itoa(l.cfg.Prefetch),
	}
	if spec.txSize > 0 {
		cfg["transaction_size"] = strconv.Itoa(spec.txSize)
	}
	switch p.name {
	case results.ActiveMQ:
		if p.amq == nil {
			return nil, nil, fmt.Errorf("experiments: ActiveMQ driver not compiled")
		}
		cfg["driver"] = "ActiveMQPerf (JMS, activemq-client " + l.machine.ActiveMQVersion + ")"
		cfg["send"] = "async (jms.useAsyncSend=true), last message synchronous to time the broker's work"
		cfg["ack"] = "AUTO_ACKNOWLEDGE"
		cfg["store"] = "KahaDB, journalDiskSyncStrategy=periodic (1 s)"
		argv, err := p.amq.Args(activemqperf.Config{
			URL: fmt.Sprintf("tcp://%s:%d", p.host.Addr(), p.port), Queue: "perf", Mode: spec.mode,
			Messages: spec.messages, MessageSize: l.cfg.MessageSize, TxSize: spec.txSize,
			Prefetch: l.cfg.Prefetch, Duration: l.cfg.PeerTimeCap,
		})
		return argv, cfg, err
	default:
		cfg["driver"] = "rabbitmq-perf-test (amqp091-go v1.16.0)"
		cfg["send"] = "no publisher confirms; the last message alone confirmed to time the broker's work"
		cfg["ack"] = "auto-ack (no-ack consumer; RabbitMQ does not bound no-ack consumers by basic.qos)"
		argv := []string{l.bin(rabbitDriverBin),
			fmt.Sprintf("--url=amqp://guest:guest@%s:%d/", p.host.Addr(), p.port),
			"--queue=perf", "--mode=" + spec.mode,
			"--messages=" + strconv.FormatInt(max(spec.messages, 1), 10),
			"--message-size=" + strconv.Itoa(l.cfg.MessageSize),
			"--tx-size=" + strconv.Itoa(spec.txSize),
			"--prefetch=" + strconv.Itoa(l.cfg.Prefetch),
			"--duration=" + l.cfg.PeerTimeCap.String(),
		}
		if spec.mode != "reset" {
			argv = append(argv, "--json")
		}
		return argv, cfg, nil
	}
}

// peerReset deletes the queue and its messages.
func (l *lab) peerReset(ctx context.Context, p *peer) error {
	argv, _, err := l.peerDriver(p, peerSpec{mode: "reset"})
	if err != nil {
		return err
	}
	out, err := l.tb.Client.Command(ctx, argv...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("experiments: resetting the %s queue: %w\n%s", p.name, err, out)
	}
	return nil
}

// peerRun runs one producer or consumer test with the peer's own client; a
// producer run also measures the disk space the messages took.
func (l *lab) peerRun(ctx context.Context, p *peer, spec peerSpec, measureStorage bool, run *results.Run) error {
	argv, cfg, err := l.peerDriver(p, spec)
	if err != nil {
		return err
	}
	run.Config = cfg
	var before map[string]int64
	if measureStorage {
		if _, _, err := kit.Settle(ctx, p.dataDir, time.Second, 10*time.Second); err != nil {
			return err
		}
		if before, err = kit.FileBlocks(p.dataDir); err != nil {
			return err
		}
	}
	cpu0, _ := p.srv.CPUSeconds()
	writes := startDiskWrites(p.srv)
	res, err := kit.DriverRun{Host: l.tb.Client, Argv: argv, LogPath: l.logPath(run.ID), Link: l.tb.WatchLink(run, l.log), Usage: run.Conditions}.Run(ctx)
	if err != nil {
		return err
	}
	run.Result = res
	writes.record(run)
	if cpu1, err := p.srv.CPUSeconds(); err == nil {
		run.BrokerCPUSeconds = cpu1 - cpu0
	}
	if measureStorage && res.Messages > 0 {
		// Wait for the store to write what it defers: KahaDB checkpoints its
		// index every 5 s, RabbitMQ flushes its queue index on its own schedule.
		if _, _, err := kit.Settle(ctx, p.dataDir, p.quiet, 30*time.Second); err != nil {
			return err
		}
		after, err := kit.FileBlocks(p.dataDir)
		if err != nil {
			return err
		}
		run.StorageBytesPerMsg = float64(kit.Growth(before, after)) / float64(res.Messages)
		run.Config["storage_by_file"] = kit.DescribeKinds(kit.GrowthByKind(before, after), res.Messages) + " (bytes per message)"
		run.Config["storage_measured_in"] = p.dataDir
		run.Config["storage_method"] = "growth of allocated blocks of new and grown files after the store was unchanged for " + p.quiet.String()
	}
	run.BrokerRSSBytes, _ = p.srv.RSSBytes()
	return nil
}

// peerWarmUp sends and receives some messages that are not measured.
func (l *lab) peerWarmUp(ctx context.Context, p *peer) error {
	if l.cfg.PeerWarmUpMessages == 0 {
		return nil
	}
	if err := l.peerReset(ctx, p); err != nil {
		return err
	}
	for _, mode := range []string{"produce", "consume"} {
		argv, _, err := l.peerDriver(p, peerSpec{mode: mode, messages: l.cfg.PeerWarmUpMessages})
		if err != nil {
			return err
		}
		if _, err := (kit.DriverRun{Host: l.tb.Client, Argv: argv, LogPath: l.logPath(string(p.name) + "-warm-up-" + mode)}).Run(ctx); err != nil {
			return fmt.Errorf("experiments: %s warm-up: %w", p.name, err)
		}
	}
	return l.peerReset(ctx, p)
}
