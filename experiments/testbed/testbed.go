// Package testbed runs the paper's two-machine testbed on one Linux machine,
// through scripts/testbed.sh: every host is a network namespace pinned to
// one CPU, and hosts are joined by veth links shaped to the link rate.
//
// Paper §5: the broker and the producer or consumer ran on two machines
// joined by a 1 Gb network link, and at batch 50 the producer almost
// saturated that link. Up builds that: host "broker" on core 0,
// host "client" on core 1, joined by a 1 Gbit/s link shaped in both
// directions with tbf. With Brokers > 1 the broker hosts (broker1..brokerN)
// and the client hang off a bridge, each on its own shaped link.
//
// Deviation: tbf counts each frame with its Ethernet header but without the
// preamble, inter-frame gap and FCS of real Ethernet (24 bytes per frame),
// so a bulk TCP transfer with 1500-byte frames peaks near 956 Mbit/s of
// payload here against about 941 Mbit/s on a real 1 GbE link.
//
// Up needs root. All processes run through Command are killed by Down.
package testbed

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Errors returned by Up.
var (
	// ErrNotRoot means the caller is not root; namespaces, tc and cgroups need it.
	ErrNotRoot = errors.New("testbed: must run as root (network namespaces, tc and cgroups need it)")
	// ErrNoScript means scripts/testbed.sh was not found (set Options.Script or TESTBED_SCRIPT).
	ErrNoScript = errors.New("testbed: scripts/testbed.sh not found; set Options.Script or TESTBED_SCRIPT")
)

// Link rates accepted by Options.Link.
const (
	Link1Gbit  = "1gbit"
	Link10Gbit = "10gbit"
	LinkNone   = "none"
)

// downTimeout bounds Down: the script waits up to ~6 s for processes to die.
const downTimeout = time.Minute

// Options configures Up. The zero value is the paper's testbed: hosts broker
// and client over a 1 Gbit/s link.
type Options struct {
	// Link is the rate of every link: Link1Gbit (default), Link10Gbit or LinkNone (unshaped veth).
	Link string
	// Hosts names the hosts (default broker, client); names matching broker*
	// get the first CPU, the others the second. Exclusive with Brokers.
	Hosts []string
	// Brokers, when > 1, makes hosts broker1..brokerN and client on a bridge.
	Brokers int
	// Mem is an optional memory limit: one size for every host ("2g") or per
	// host ("broker=2g,client=1g").
	Mem string
	// CPUs overrides the CPU of some hosts.
	CPUs map[string]int
	// StateDir holds the run's state; default a new temporary directory,
	// removed by Down.
	StateDir string
	// Script is the path of testbed.sh; default $TESTBED_SCRIPT, else
	// scripts/testbed.sh found upward from the working directory or the executable.
	Script string
	// Logger receives the script's messages; default slog.Default().
	Logger *slog.Logger
}

// Host is one emulated machine.
type Host struct {
	Name  string // as given in Options
	Addr  string // IPv4 address on its link
	CPU   int    // the core it is pinned to
	Netns string // network namespace name, unique to the run
}

// LinkStats counts bytes on a host's link: every frame with its Ethernet
// header when the link is shaped; interface counters when LinkNone.
type LinkStats struct {
	Sent     uint64 // bytes the host sent
	Received uint64 // bytes sent to the host
}

// Testbed is a running testbed. Its methods are safe for concurrent use;
// Down must be called once the work is over.
type Testbed struct {
	script   string
	state    string
	ownState bool
	log      *slog.Logger
	id       string
	link     string
	hosts    []Host
}

// Up creates the testbed. On failure nothing is left behind.
func Up(ctx context.Context, opts Options) (*Testbed, error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	args, err := upArgs(opts)
	if err != nil {
		return nil, err
	}
	script, err := findScript(opts.Script)
	if err != nil {
		return nil, err
	}
	tb := &Testbed{script: script, state: opts.StateDir, log: opts.Logger}
	if tb.log == nil {
		tb.log = slog.Default()
	}
	if tb.state == "" {
		if tb.state, err = os.MkdirTemp("", "testbed-"); err != nil {
			return nil, fmt.Errorf("testbed: state dir: %w", err)
		}
		tb.ownState = true
	}
	out, err := tb.run(ctx, args...)
	if err != nil {
		// The script's trap has removed what it made (ctx cancellation sends
		// SIGTERM, which runs the trap too). Run down as well when the state
		// directory is ours, so no other run can be in it: that covers a
		// script killed outright.
		if tb.ownState {
			err = errors.Join(err, tb.Down())
		}
		return nil, err
	}
	if err := tb.parseInfo(out); err != nil {
		return nil, errors.Join(err, tb.Down())
	}
	tb.log.Info("testbed up", "run", tb.id, "link", tb.link, "hosts", tb.hosts)
	return tb, nil
}

func upArgs(opts Options) ([]string, error) {
	link := opts.Link
	if link == "" {
		link = Link1Gbit
	}
	if linkRate(link) < 0 {
		return nil, fmt.Errorf("testbed: link %q: want %s, %s or %s", link, Link1Gbit, Link10Gbit, LinkNone)
	}
	args := []string{"up", "--link=" + link}
	switch {
	case opts.Brokers != 0 && len(opts.Hosts) != 0:
		return nil, errors.New("testbed: give Hosts or Brokers, not both")
	case opts.Brokers < 0:
		return nil, fmt.Errorf("testbed: Brokers %d < 0", opts.Brokers)
	case opts.Brokers > 0:
		args = append(args, "--brokers="+strconv.Itoa(opts.Brokers))
	case len(opts.Hosts) != 0:
		args = append(args, "--hosts="+strings.Join(opts.Hosts, ","))
	}
	if opts.Mem != "" {
		args = append(args, "--mem="+opts.Mem)
	}
	if len(opts.CPUs) != 0 {
		var kv []string
		for h, c := range opts.CPUs {
			kv = append(kv, h+"="+strconv.Itoa(c))
		}
		args = append(args, "--cpus="+strings.Join(kv, ","))
	}
	return args, nil
}

// linkRate is the rate of a link setting in bit/s: 0 for none, -1 if unknown.
func linkRate(link string) int64 {
	switch link {
	case Link1Gbit:
		return 1e9
	case Link10Gbit:
		return 10e9
	case LinkNone:
		return 0
	}
	return -1
}

func findScript(path string) (string, error) {
	if path == "" {
		path = os.Getenv("TESTBED_SCRIPT")
	}
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("%w: %w", ErrNoScript, err)
		}
		return filepath.Abs(path)
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		for {
			p := filepath.Join(dir, "scripts", "testbed.sh")
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", ErrNoScript
}

// run runs the script with the run's state and returns its standard output.
func (tb *Testbed) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, tb.script, args...)
	cmd.Env = tb.env()
	// SIGTERM lets the script's trap remove what it made so far.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if line != "" {
			tb.log.Debug(line, "cmd", args[0])
		}
	}
	if err != nil {
		return "", fmt.Errorf("testbed: %s %s: %w: %s", filepath.Base(tb.script), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

func (tb *Testbed) env() []string {
	return append(os.Environ(), "TESTBED_STATE="+tb.state)
}

// parseInfo reads the script's info: "run ID", "link RATE", "host NAME ADDR CPU NETNS".
func (tb *Testbed) parseInfo(out string) error {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "run":
			tb.id = f[1]
		case len(f) == 2 && f[0] == "link":
			tb.link = f[1]
		case len(f) == 5 && f[0] == "host":
			cpu, err := strconv.Atoi(f[3])
			if err != nil {
				return fmt.Errorf("testbed: bad info line %q: %w", sc.Text(), err)
			}
			tb.hosts = append(tb.hosts, Host{Name: f[1], Addr: f[2], CPU: cpu, Netns: f[4]})
		default:
			return fmt.Errorf("testbed: bad info line %q", sc.Text())
		}
	}
	if tb.id == "" || len(tb.hosts) < 2 {
		return fmt.Errorf("testbed: incomplete info from up: %q", out)
	}
	return nil
}

// ID is the run's id, part of every namespace and cgroup name.
func (tb *Testbed) ID() string { return tb.id }

// StateDir is the directory of the run's journal (testbed.sh's
// TESTBED_STATE); Down removes it when Up made it.
func (tb *Testbed) StateDir() string { return tb.state }

// Link is the link setting (Link1Gbit, Link10Gbit or LinkNone).
func (tb *Testbed) Link() string { return tb.link }

// LinkRate is the rate of every link in bit/s, 0 when unshaped.
func (tb *Testbed) LinkRate() int64 { return linkRate(tb.link) }

// Hosts lists the hosts in the order they were given.
func (tb *Testbed) Hosts() []Host { return append([]Host(nil), tb.hosts...) }

// Host returns the named host.
func (tb *Testbed) Host(name string) (Host, error) {
	for _, h := range tb.hosts {
		if h.Name == name {
			return h, nil
		}
	}
	return Host{}, fmt.Errorf("testbed: no host %q in run %s", name, tb.id)
}

// Addr is the IPv4 address of the named host.
func (tb *Testbed) Addr(host string) (string, error) {
	h, err := tb.Host(host)
	return h.Addr, err
}

// Command returns a command that runs name inside host: in its network
// namespace, pinned to its CPU and in its cgroups (testbed.sh exec). The
// started process is the command itself, so signals and exit status are
// its own. Keep TESTBED_STATE in Env if you replace it.
func (tb *Testbed) Command(ctx context.Context, host, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, tb.script, append([]string{"exec", host, "--", name}, args...)...)
	cmd.Env = tb.env()
	return cmd
}

// LinkBytes counts the bytes on host's link so far; the difference of two
// readings divided by the time between them and LinkRate()/8 is the link
// utilisation.
func (tb *Testbed) LinkBytes(host string) (LinkStats, error) {
	if _, err := tb.Host(host); err != nil {
		return LinkStats{}, err
	}
	out, err := tb.run(context.Background(), "stats", host)
	if err != nil {
		return LinkStats{}, err
	}
	var s LinkStats
	if _, err := fmt.Sscan(out, &s.Sent, &s.Received); err != nil {
		return LinkStats{}, fmt.Errorf("testbed: stats %s: %q: %w", host, out, err)
	}
	return s, nil
}

// Down kills every process running in the hosts and removes the
// namespaces, links, cgroups and state. It is safe to call more than once.
func (tb *Testbed) Down() error {
	ctx, cancel := context.WithTimeout(context.Background(), downTimeout)
	defer cancel()
	_, err := tb.run(ctx, "down")
	if err == nil && tb.ownState {
		err = os.RemoveAll(tb.state)
	}
	return err
}
