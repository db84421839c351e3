package kit

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/netdb11/kafka/experiments/testbed"
)

// Host is a machine of the testbed on which the harness starts processes: the
// broker host runs the system under test, the client host its producer or
// consumer (paper §5: one machine ran the broker, the other the producer or
// the consumer).
type Host interface {
	// Name is the host's name in the testbed ("broker", "client").
	Name() string
	// Addr is the address other hosts use to reach servers on this host.
	Addr() string
	// Command returns a command that runs argv on this host. The started
	// process is argv itself, so /proc/PID describes it.
	Command(ctx context.Context, argv ...string) *exec.Cmd
	// Dial opens a TCP connection to addr from this host.
	Dial(ctx context.Context, addr string) (net.Conn, error)
}

// localHost runs commands directly on this machine.
type localHost struct{ name string }

// Local is this machine as the host called name.
func Local(name string) Host { return localHost{name} }

// Name is the host's role.
func (h localHost) Name() string { return h.name }

// Addr is loopback: every server listens on 127.0.0.1.
func (h localHost) Addr() string { return "127.0.0.1" }

// Command runs argv directly.
func (h localHost) Command(ctx context.Context, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

// Dial dials addr from this machine.
func (h localHost) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// testbedHost runs commands inside a host of the emulated paper testbed (a
// network namespace pinned to its CPU) through experiments/testbed, which runs
// `scripts/testbed.sh exec HOST -- CMD...`.
type testbedHost struct {
	tb                *testbed.Testbed
	name, addr, netns string
}

// TestbedHost is host name of the emulated testbed tb.
func TestbedHost(tb *testbed.Testbed, name string) (Host, error) {
	h, err := tb.Host(name)
	if err != nil {
		return nil, err
	}
	return testbedHost{tb: tb, name: name, addr: h.Addr, netns: h.Netns}, nil
}

// Name is the host's name in the testbed.
func (h testbedHost) Name() string { return h.name }

// Addr is the host's address on its link.
func (h testbedHost) Addr() string { return h.addr }

// Command runs argv inside the host (testbed.sh exec).
func (h testbedHost) Command(ctx context.Context, argv ...string) *exec.Cmd {
	return h.tb.Command(ctx, h.name, argv[0], argv[1:]...)
}

// Dial dials addr from inside the host's network namespace.
func (h testbedHost) Dial(ctx context.Context, addr string) (net.Conn, error) {
	return testbed.DialIn(ctx, h.netns, addr)
}

// Testbed is where the experiments run.
type Testbed struct {
	// Kind is loopback or paper.
	Kind string
	// Broker runs the system under test; Client its producer or consumer.
	Broker, Client Host
	// Brokers are every broker host, Broker first (several for the scale-out).
	Brokers []Host
	// BrokerCPU and ClientCPU are the cores the hosts are pinned to (-1 on
	// loopback: not pinned).
	BrokerCPU, ClientCPU int
	// LinkBitsPerSec is the emulated link's rate (0 for loopback).
	LinkBitsPerSec float64
	// Description says, in words, what the testbed is.
	Description string

	emulated   *testbed.Testbed     // nil on loopback
	clientLink *testbed.LinkCounter // the client host's link; nil on loopback
	closeOnce  sync.Once
	closeErr   error
}

// Testbed kinds.
const (
	Loopback = "loopback"
	Paper    = "paper"
)

// StartTestbed prepares the testbed of the given kind. For Paper it brings up
// two hosts, broker on core 0 and client on core 1, joined by a 1 Gbit link
// (paper §5), with scripts/testbed.sh found under repoDir; Close takes them
// down again.
func StartTestbed(ctx context.Context, kind, repoDir string, log *slog.Logger) (*Testbed, error) {
	switch kind {
	case Loopback:
		b := localHost{"broker"}
		return &Testbed{Kind: kind, Broker: b, Brokers: []Host{b}, Client: localHost{"client"}, BrokerCPU: -1, ClientCPU: -1,
			Description: "loopback: broker and clients on this machine, over 127.0.0.1, sharing its CPUs"}, nil
	case Paper:
		return StartEmulated(ctx, repoDir, log, 1)
	}
	return nil, fmt.Errorf("kit: unknown testbed %q (want loopback or paper)", kind)
}

// StartEmulated brings up the paper testbed with n broker hosts: "broker" and
// "client" joined by one link for n = 1; broker1..brokerN and client each on
// its own link to a bridge otherwise. Every broker host is pinned to core 0,
// the client to core 1 (scripts/testbed.sh), every link shaped to 1 Gbit/s.
func StartEmulated(ctx context.Context, repoDir string, log *slog.Logger, n int) (*Testbed, error) {
	opts := testbed.Options{Link: testbed.Link1Gbit, Script: repoDir + "/scripts/testbed.sh", Logger: log}
	names := []string{"broker"}
	if n == 1 {
		opts.Hosts = []string{"broker", "client"}
	} else {
		opts.Brokers = n
		names = nil
		for i := 1; i <= n; i++ {
			names = append(names, "broker"+strconv.Itoa(i))
		}
	}
	em, err := testbed.Up(ctx, opts)
	if err != nil {
		return nil, err
	}
	tb := &Testbed{Kind: Paper, LinkBitsPerSec: float64(em.LinkRate()), emulated: em}
	fail := func(err error) (*Testbed, error) {
		return nil, fmt.Errorf("kit: %w (and taking the testbed down: %v)", err, em.Down())
	}
	for _, name := range names {
		h, err := em.Host(name)
		if err != nil {
			return fail(err)
		}
		tb.Brokers = append(tb.Brokers, testbedHost{tb: em, name: name, addr: h.Addr, netns: h.Netns})
		tb.BrokerCPU = h.CPU
	}
	tb.Broker = tb.Brokers[0]
	c, err := em.Host("client")
	if err != nil {
		return fail(err)
	}
	tb.Client, tb.ClientCPU = testbedHost{tb: em, name: "client", addr: c.Addr, netns: c.Netns}, c.CPU
	if tb.clientLink, err = em.LinkCounter(ctx, "client"); err != nil {
		return fail(err)
	}
	if n == 1 {
		tb.Description = fmt.Sprintf("paper: broker host (%s, CPU %d) and client host (%s, CPU %d) in network namespaces joined by a %s link shaped with tbf (scripts/testbed.sh run %s)",
			tb.Broker.Addr(), tb.BrokerCPU, tb.Client.Addr(), tb.ClientCPU, em.Link(), em.ID())
	} else {
		tb.Description = fmt.Sprintf("paper, scale-out: %d broker hosts (all on CPU %d) and a client host (CPU %d), each on its own %s link to a bridge, shaped with tbf (scripts/testbed.sh run %s)",
			n, tb.BrokerCPU, tb.ClientCPU, em.Link(), em.ID())
	}
	return tb, nil
}

// Reachable reports whether the client host can open a TCP connection to
// addr:port. On the emulated testbed the harness itself sits outside the hosts'
// namespaces, so the probe runs inside the client host.
func (tb *Testbed) Reachable(ctx context.Context, addr string, port int) bool {
	if tb.emulated == nil {
		return DialOK(ctx, addr, port)
	}
	probe := fmt.Sprintf("exec 3<>/dev/tcp/%s/%d", addr, port)
	return tb.Client.Command(ctx, "bash", "-c", probe).Run() == nil
}

// Close takes down what StartTestbed made; later calls return the first's
// result.
func (tb *Testbed) Close() error {
	if tb.emulated == nil {
		return nil
	}
	tb.closeOnce.Do(func() { tb.closeErr = tb.emulated.Down() })
	return tb.closeErr
}

// DialOK reports whether this machine can open a TCP connection to
// addr:port within a second.
func DialOK(ctx context.Context, addr string, port int) bool {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(addr, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}
