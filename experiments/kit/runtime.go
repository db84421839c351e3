package kit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/netdb11/kafka/experiments/results"
)

// Runtime starts, stops and measures the systems under test. Processes
// runs each as processes on a host of the testbed, Containers each in
// its own container with resource limits (--runtime); the parts' steps are
// the same for both.
type Runtime interface {
	// DataDir is where a server whose state directory is dir keeps its data
	// (kafka-server's log.dir).
	DataDir(dir string) string
	// StartServer starts a kafka-server. It may not accept connections yet:
	// the caller waits for its port.
	StartServer(ctx context.Context, s ServerSpec) (Server, error)
	// InstallPeer makes a peer's software available where it will run
	// (scripts/peers.sh install): the ActiveMQ driver compiles against the
	// client jars it installs.
	InstallPeer(ctx context.Context, p PeerSpec) error
	// StartPeer starts an installed peer (scripts/peers.sh start). A start
	// that fails midway leaves nothing running.
	StartPeer(ctx context.Context, p PeerSpec) (Server, error)
}

// ServerSpec is one kafka-server to start.
type ServerSpec struct {
	// System is the system it runs (kafka).
	System results.System
	// Host runs it.
	Host Host
	// Name names it in logs and errors ("kafka-server main-r1").
	Name string
	// Dir is its state directory; its data is in DataDir(Dir).
	Dir string
	// LogPath receives its output (process runtime).
	LogPath string
	// Argv is its command line: the binary, then its flags.
	Argv []string
}

// RunRecorder is a Runtime that records in each run how it ran the run's
// system (the container runtime: the image, the limits, the memory peak).
type RunRecorder interface {
	// BeginRun is called before the run of system is measured.
	BeginRun(system results.System)
	// EndRun is called after, with the run to complete.
	EndRun(run *results.Run)
}

// PeerSpec is one ActiveMQ or RabbitMQ as scripts/peers.sh runs it.
type PeerSpec struct {
	// Name is the peer: activemq or rabbitmq.
	Name results.System
	// Host runs it (the testbed's broker host).
	Host Host
	// Dir holds its configuration, data and logs.
	Dir string
	// Env sets its ports (ACTIVEMQ_PORT, RABBITMQ_PORT, ...) and address
	// (PEERS_BIND).
	Env []string
	// PIDFile is where the peer writes the PID of the process doing the work
	// (the JVM, the Erlang VM), the one measured.
	PIDFile string
}

// Server is a running system under test.
type Server interface {
	// Stop ends the server gracefully, killing it when it is not gone after
	// timeout; later calls return the first call's result.
	Stop(timeout time.Duration) error
	// Exited reports whether the server has ended on its own, and why.
	Exited() (bool, error)
	// CPUSeconds is the CPU time the server has used so far.
	CPUSeconds() (float64, error)
	// RSSBytes is the server's resident memory now.
	RSSBytes() (int64, error)
	// DiskWriteBytes is what the server has written to storage so far
	// (diskwrites.go).
	DiskWriteBytes() (int64, error)
}

// Processes runs the systems as processes on the testbed's hosts: the
// broker binary directly, the peers through scripts/peers.sh; it measures
// them through /proc.
type Processes struct {
	// repoDir holds scripts/peers.sh.
	RepoDir string
}

// DataDir is the state directory itself.
func (Processes) DataDir(dir string) string { return dir }

// StartServer starts the server on its host as a process of its own group.
// It is not tied to ctx: a server is stopped gracefully by Stop.
func (Processes) StartServer(_ context.Context, s ServerSpec) (Server, error) {
	return StartOn(s.Host, s.Name, s.LogPath, s.Argv...)
}

// InstallPeer runs scripts/peers.sh install on the peer's host.
func (rt Processes) InstallPeer(ctx context.Context, p PeerSpec) error {
	_, err := rt.peers(ctx, p, "install", nil)
	return err
}

// StartPeer runs scripts/peers.sh start on the peer's host; when that fails,
// peers.sh stop undoes whatever it started.
func (rt Processes) StartPeer(ctx context.Context, p PeerSpec) (Server, error) {
	if _, err := rt.peers(ctx, p, "start", p.Env); err != nil {
		_, serr := rt.peers(context.WithoutCancel(ctx), p, "stop", nil)
		return nil, errors.Join(err, serr)
	}
	return &peerProcess{rt: rt, spec: p}, nil
}

// peers runs scripts/peers.sh ACTION NAME DIR with env on the peer's host.
func (rt Processes) peers(ctx context.Context, p PeerSpec, action string, env []string) (string, error) {
	argv := append(append([]string{"env"}, env...), filepath.Join(rt.RepoDir, "scripts", "peers.sh"), action, string(p.Name), p.Dir)
	out, err := p.Host.Command(ctx, argv...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kit: peers.sh %s %s: %w\n%s", action, p.Name, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// peerProcess is a peer started by scripts/peers.sh, measured through the
// process its PID file names.
type peerProcess struct {
	rt   Processes
	spec PeerSpec
}

// Stop runs scripts/peers.sh stop, which waits for the peer's processes to
// end (and ends RabbitMQ's epmd).
func (p *peerProcess) Stop(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err := p.rt.peers(ctx, p.spec, "stop", nil)
	return err
}

// Exited reports whether the process in the PID file is gone.
func (p *peerProcess) Exited() (bool, error) {
	pid := p.pid()
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return true, fmt.Errorf("kit: %s is not running (PID file %s)", p.spec.Name, p.spec.PIDFile)
	}
	return false, nil
}

// CPUSeconds is the CPU time of the peer's working process.
func (p *peerProcess) CPUSeconds() (float64, error) { return CPUSeconds(p.pid()) }

// RSSBytes is the resident memory of the peer's working process.
func (p *peerProcess) RSSBytes() (int64, error) { return RSSBytes(p.pid()) }

func (p *peerProcess) pid() int {
	b, err := os.ReadFile(p.spec.PIDFile)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}
