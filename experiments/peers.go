package experiments

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/experiments/activemqperf"
	"github.com/netdb11/kafka/experiments/results"
)

// peer is a running ActiveMQ or RabbitMQ started by scripts/peers.sh, as a
// process or (container runtime) in its container.
type peer struct {
	name results.System
	dir  string
	host Host
	port int
	// ctr is the peer's container in the container runtime; nil for a process.
	ctr *container
	// dataDir is where the peer stores messages: KahaDB's journal and index, or
	// RabbitMQ's Mnesia directory with its queue indexes and message stores.
	dataDir string
	// pidFile holds the PID of the process doing the work (the JVM, the Erlang VM).
	pidFile string
	// quiet is how long the data directory must stay unchanged before its size
	// is taken as final.
	quiet time.Duration
}

func (h *harness) peersScript() string { return filepath.Join(h.cfg.RepoDir, "scripts", "peers.sh") }

// peerEnv assigns ports: on loopback free ones, so a run never collides with
// another broker (or epmd) on this machine; on the testbed the defaults inside the
// broker host's own namespace.
func (h *harness) peerEnv(name results.System) (env []string, port int, err error) {
	env = []string{"PEERS_BIND=" + h.tb.Broker.Addr()}
	if h.tb.Kind == Paper {
		if name == results.ActiveMQ {
			return env, 61616, nil
		}
		return env, 5672, nil
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = freePort(h.tb); err != nil {
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

// peersCmd runs scripts/peers.sh ACTION NAME DIR on the broker host, or the
// harness's stand-in for it when a test set one.
func (h *harness) peersCmd(ctx context.Context, env []string, action, name, dir string) (string, error) {
	if h.peersHook != nil {
		return h.peersHook(ctx, env, action, name, dir)
	}
	argv := append(append([]string{"env"}, env...), h.peersScript(), action, name, dir)
	cmd := h.tb.Broker.Command(ctx, argv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("experiments: peers.sh %s %s: %w\n%s", action, name, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// peerDir is where a peer keeps its state during the run.
func (h *harness) peerDir(name results.System) string { return filepath.Join(h.work, string(name)) }

// installPeer installs a peer's Debian package (and, for ActiveMQ, a JDK) when
// missing. It runs before anything that needs the package's files: the
// ActiveMQ driver compiles against the package's client jars. In the container
// runtime the servers come with their images, and only ActiveMQ is installed
// here, for the client jars and the JDK of its driver.
func (h *harness) installPeer(ctx context.Context, name results.System) error {
	if h.cfg.Runtime == ContainerRuntime && name != results.ActiveMQ {
		// The server comes with its image and RabbitMQ's client is our
		// Go driver: nothing to install here.
		return nil
	}
	_, err := h.peersCmd(ctx, nil, "install", string(name), h.peerDir(name))
	return err
}

// compileActiveMQ builds the JMS driver once per invocation.
func (h *harness) compileActiveMQ(ctx context.Context) error {
	if h.amq != nil {
		return nil
	}
	compile := activemqperf.Compile
	if h.compileHook != nil {
		compile = h.compileHook
	}
	var err error
	h.amq, err = compile(ctx, filepath.Join(h.work, "activemq-driver"))
	return err
}

// startPeer starts an installed peer with its state under the work directory.
func (h *harness) startPeer(ctx context.Context, name results.System) (*peer, error) {
	dir := h.peerDir(name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	env, port, err := h.peerEnv(name)
	if err != nil {
		return nil, err
	}
	p := &peer{name: name, dir: dir, host: h.tb.Broker, port: port}
	if h.cfg.Runtime == ContainerRuntime {
		// The image runs scripts/peers.sh run: the same configuration.
		if p.ctr, err = h.startContainer(ctx, name, dir, env, nil); err != nil {
			return nil, err
		}
	} else {
		// Registered before the start: a start that fails midway leaves nothing.
		h.cleanups = append(h.cleanups, func() {
			if _, err := h.peersCmd(context.Background(), nil, "stop", string(name), dir); err != nil {
				h.log.Warn("stopping peer", "peer", name, "err", err)
			}
		})
		out, err := h.peersCmd(ctx, env, "start", string(name), dir)
		if err != nil {
			return nil, err
		}
		h.log.Info("peer started", "peer", name, "status", strings.TrimSpace(out))
	}
	switch name {
	case results.ActiveMQ:
		// Longer than KahaDB's 5 s index checkpoint interval.
		p.dataDir, p.pidFile, p.quiet = filepath.Join(dir, "data", "kahadb"), filepath.Join(dir, "pid"), 6*time.Second
	default:
		p.dataDir, p.pidFile, p.quiet = filepath.Join(dir, "data"), filepath.Join(dir, "beam.pid"), 2*time.Second
	}
	return p, nil
}

// stopPeer stops a peer by its PID (and RabbitMQ's epmd).
func (h *harness) stopPeer(ctx context.Context, p *peer) error {
	if p == nil {
		return nil
	}
	if p.ctr != nil {
		return h.stopContainer(ctx, p.ctr)
	}
	_, err := h.peersCmd(context.WithoutCancel(ctx), nil, "stop", string(p.name), p.dir)
	return err
}

// meter reads the peer's CPU time and memory: its server process's (the JVM,
// the Erlang VM), or its whole container's.
func (p *peer) meter() meter {
	if p.ctr != nil {
		return meter{cg: &p.ctr.cg}
	}
	return meter{pid: p.pid}
}

func (p *peer) pid() int {
	b, err := os.ReadFile(p.pidFile)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// peerSpec is one peer driver run.
type peerSpec struct {
	mode     string // produce, consume, reset
	messages int64
	txSize   int
}

// peerDriver returns the command line of the peer's own-client driver.
func (h *harness) peerDriver(p *peer, spec peerSpec) ([]string, map[string]string, error) {
	cfg := map[string]string{
		"mode": spec.mode, "messages": strconv.FormatInt(spec.messages, 10),
		"message_size": strconv.Itoa(h.cfg.MessageSize), "queue": "perf (durable)", "delivery": "persistent",
		"time_cap": h.cfg.PeerTimeCap.String(), "prefetch": strconv.Itoa(h.cfg.Prefetch),
	}
	if spec.txSize > 0 {
		cfg["transaction_size"] = strconv.Itoa(spec.txSize)
	}
	switch p.name {
	case results.ActiveMQ:
		if h.amq == nil {
			return nil, nil, fmt.Errorf("experiments: ActiveMQ driver not compiled")
		}
		cfg["driver"] = "ActiveMQPerf (JMS, activemq-client " + h.machine.ActiveMQVersion + ")"
		cfg["send"] = "async (jms.useAsyncSend=true), last message synchronous to time the broker's work"
		cfg["ack"] = "AUTO_ACKNOWLEDGE"
		cfg["store"] = "KahaDB, journalDiskSyncStrategy=periodic (1 s)"
		argv, err := h.amq.Args(activemqperf.Config{
			URL: fmt.Sprintf("tcp://%s:%d", p.host.Addr(), p.port), Queue: "perf", Mode: spec.mode,
			Messages: spec.messages, MessageSize: h.cfg.MessageSize, TxSize: spec.txSize,
			Prefetch: h.cfg.Prefetch, Duration: h.cfg.PeerTimeCap,
		})
		return argv, cfg, err
	default:
		cfg["driver"] = "rabbitmq-perf-test (amqp091-go v1.16.0)"
		cfg["send"] = "no publisher confirms; the last message alone confirmed to time the broker's work"
		cfg["ack"] = "auto-ack (no-ack consumer; RabbitMQ does not bound no-ack consumers by basic.qos)"
		argv := []string{h.bin(rabbitDriverBin),
			fmt.Sprintf("--url=amqp://guest:guest@%s:%d/", p.host.Addr(), p.port),
			"--queue=perf", "--mode=" + spec.mode,
			"--messages=" + strconv.FormatInt(max(spec.messages, 1), 10),
			"--message-size=" + strconv.Itoa(h.cfg.MessageSize),
			"--tx-size=" + strconv.Itoa(spec.txSize),
			"--prefetch=" + strconv.Itoa(h.cfg.Prefetch),
			"--duration=" + h.cfg.PeerTimeCap.String(),
		}
		if spec.mode != "reset" {
			argv = append(argv, "--json")
		}
		return argv, cfg, nil
	}
}

// peerReset deletes the queue and its messages.
func (h *harness) peerReset(ctx context.Context, p *peer) error {
	argv, _, err := h.peerDriver(p, peerSpec{mode: "reset"})
	if err != nil {
		return err
	}
	out, err := h.tb.Client.Command(ctx, argv...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("experiments: resetting the %s queue: %w\n%s", p.name, err, out)
	}
	return nil
}

// peerRun runs one producer or consumer test with the peer's own client; a
// producer run also measures the disk space the messages took.
func (h *harness) peerRun(ctx context.Context, p *peer, spec peerSpec, measureStorage bool, run *results.Run) error {
	argv, cfg, err := h.peerDriver(p, spec)
	if err != nil {
		return err
	}
	run.Config = cfg
	var before map[string]int64
	if measureStorage {
		if _, _, err := settle(ctx, p.dataDir, time.Second, 10*time.Second); err != nil {
			return err
		}
		if before, err = fileBlocks(p.dataDir); err != nil {
			return err
		}
	}
	m := p.meter()
	cpu0, _ := m.cpuSeconds()
	res, err := driverRun{host: h.tb.Client, argv: argv, logPath: h.logPath(run.ID), link: h.tb.watchLink(run, h.log)}.run(ctx)
	if err != nil {
		return err
	}
	run.Result = res
	if cpu1, err := m.cpuSeconds(); err == nil {
		run.BrokerCPUSeconds = cpu1 - cpu0
	}
	if measureStorage && res.Messages > 0 {
		// Wait for the store to write what it defers: KahaDB checkpoints its
		// index every 5 s, RabbitMQ flushes its queue index on its own schedule.
		if _, _, err := settle(ctx, p.dataDir, p.quiet, 30*time.Second); err != nil {
			return err
		}
		after, err := fileBlocks(p.dataDir)
		if err != nil {
			return err
		}
		run.StorageBytesPerMsg = float64(growth(before, after)) / float64(res.Messages)
		run.Config["storage_by_file"] = describeKinds(growthByKind(before, after), res.Messages) + " (bytes per message)"
		run.Config["storage_measured_in"] = p.dataDir
		run.Config["storage_method"] = "growth of allocated blocks of new and grown files after the store was unchanged for " + p.quiet.String()
	}
	run.BrokerRSSBytes, _ = m.residentBytes()
	return nil
}

// peerWarmUp sends and receives some messages that are not measured.
func (h *harness) peerWarmUp(ctx context.Context, p *peer) error {
	if h.cfg.PeerWarmUpMessages == 0 {
		return nil
	}
	if err := h.peerReset(ctx, p); err != nil {
		return err
	}
	for _, mode := range []string{"produce", "consume"} {
		argv, _, err := h.peerDriver(p, peerSpec{mode: mode, messages: h.cfg.PeerWarmUpMessages})
		if err != nil {
			return err
		}
		if _, err := (driverRun{host: h.tb.Client, argv: argv, logPath: h.logPath(string(p.name) + "-warm-up-" + mode)}).run(ctx); err != nil {
			return fmt.Errorf("experiments: %s warm-up: %w", p.name, err)
		}
	}
	return h.peerReset(ctx, p)
}
