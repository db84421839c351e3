package experiments

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"

	"github.com/netdb11/kafka/experiments/testbed"
)

// Host is a machine of the testbed on which the harness starts processes: the
// broker host runs the system under test, the client host its producer or
// consumer (paper §5: "one as the broker and the other as the producer or
// consumer").
type Host interface {
	// Name is the host's name in the testbed ("broker", "client").
	Name() string
	// Addr is the address other hosts use to reach servers on this host.
	Addr() string
	// Command returns a command that runs argv on this host. The started
	// process is argv itself, so /proc/PID describes it.
	Command(ctx context.Context, argv ...string) *exec.Cmd
}

// localHost runs commands directly on this machine.
type localHost struct{ name string }

// Name is the host's role.
func (h localHost) Name() string { return h.name }

// Addr is loopback: every server listens on 127.0.0.1.
func (h localHost) Addr() string { return "127.0.0.1" }

// Command runs argv directly.
func (h localHost) Command(ctx context.Context, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

// testbedHost runs commands inside a host of the emulated paper testbed (a
// network namespace pinned to its CPU) through experiments/testbed, which runs
// `scripts/testbed.sh exec HOST -- CMD...`.
type testbedHost struct {
	tb         *testbed.Testbed
	name, addr string
}

// Name is the host's name in the testbed.
func (h testbedHost) Name() string { return h.name }

// Addr is the host's address on its link.
func (h testbedHost) Addr() string { return h.addr }

// Command runs argv inside the host (testbed.sh exec).
func (h testbedHost) Command(ctx context.Context, argv ...string) *exec.Cmd {
	return h.tb.Command(ctx, h.name, argv[0], argv[1:]...)
}

// Testbed is where the experiments run.
type Testbed struct {
	// Kind is loopback or paper.
	Kind string
	// Broker runs the system under test; Client its producer or consumer.
	Broker, Client Host
	// LinkBitsPerSec is the emulated link's rate (0 for loopback).
	LinkBitsPerSec float64
	// Description says, in words, what the testbed is.
	Description string

	emulated   *testbed.Testbed     // nil on loopback
	clientLink *testbed.LinkCounter // the client host's link; nil on loopback
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
		return &Testbed{Kind: kind, Broker: localHost{"broker"}, Client: localHost{"client"},
			Description: "loopback: broker and clients on this machine, over 127.0.0.1, sharing its CPUs"}, nil
	case Paper:
	default:
		return nil, fmt.Errorf("experiments: unknown testbed %q (want loopback or paper)", kind)
	}
	em, err := testbed.Up(ctx, testbed.Options{Link: testbed.Link1Gbit, Hosts: []string{"broker", "client"},
		Script: repoDir + "/scripts/testbed.sh", Logger: log})
	if err != nil {
		return nil, err
	}
	tb := &Testbed{Kind: kind, LinkBitsPerSec: float64(em.LinkRate()), emulated: em}
	var cpus [2]int
	for i, name := range []string{"broker", "client"} {
		h, err := em.Host(name)
		if err != nil {
			return nil, fmt.Errorf("experiments: %w (and taking the testbed down: %v)", err, em.Down())
		}
		cpus[i] = h.CPU
		host := testbedHost{tb: em, name: name, addr: h.Addr}
		if i == 0 {
			tb.Broker = host
		} else {
			tb.Client = host
		}
	}
	if tb.clientLink, err = em.LinkCounter(ctx, "client"); err != nil {
		return nil, fmt.Errorf("experiments: %w (and taking the testbed down: %v)", err, em.Down())
	}
	tb.Description = fmt.Sprintf("paper: broker host (%s, CPU %d) and client host (%s, CPU %d) in network namespaces joined by a %s link shaped with tbf (scripts/testbed.sh run %s)",
		tb.Broker.Addr(), cpus[0], tb.Client.Addr(), cpus[1], em.Link(), em.ID())
	return tb, nil
}

// reachable reports whether the client host can open a TCP connection to
// addr:port. On the emulated testbed the harness itself sits outside the hosts'
// namespaces, so the probe runs inside the client host.
func (tb *Testbed) reachable(ctx context.Context, addr string, port int) bool {
	if tb.emulated == nil {
		return dialOK(ctx, addr, port)
	}
	probe := fmt.Sprintf("exec 3<>/dev/tcp/%s/%d", addr, port)
	return tb.Client.Command(ctx, "bash", "-c", probe).Run() == nil
}

// Close takes down what StartTestbed made.
func (tb *Testbed) Close() error {
	if tb.emulated == nil {
		return nil
	}
	return tb.emulated.Down()
}
