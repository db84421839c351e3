package kit

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netdb11/kafka/experiments/machine"
	"github.com/netdb11/kafka/experiments/results"
)

// Containers runs every server in its own container, started by
// scripts/containers.sh with its state directory mounted at the same path,
// and measures it through the container's cgroup. It records, in every run,
// the container's image, limits and memory peak.
type Containers struct {
	// process installs ActiveMQ on this machine for its driver.
	process Processes
	// cpus and memory are every container's limits.
	cpus, memory string
	systems      []results.System
	log          *slog.Logger
	logs         string // where a stopped container's output is kept
	cleanups     *Cleanups
	mu           sync.Mutex // guards running
	// running are the running containers by system.
	running map[results.System]*container
}

// ContainerOptions configure NewContainers.
type ContainerOptions struct {
	// RepoDir holds scripts/containers.sh and scripts/peers.sh.
	RepoDir string
	// CPUs and Memory are every container's limits (docker run --cpus,
	// --memory).
	CPUs, Memory string
	// Systems are the systems whose images Prepare builds.
	Systems []results.System
	Log     *slog.Logger
	// Logs is where a stopped container's output is kept.
	Logs string
	// Cleanups receive the stop of every container started and of the
	// dockerd Prepare starts.
	Cleanups *Cleanups
}

// NewContainers is the container runtime.
func NewContainers(o ContainerOptions) *Containers {
	return &Containers{process: Processes{RepoDir: o.RepoDir}, cpus: o.CPUs, memory: o.Memory,
		systems: o.Systems, log: o.Log, logs: o.Logs, cleanups: o.Cleanups, running: map[results.System]*container{}}
}

// container is one system under test running in its own container.
type container struct {
	rt     *Containers
	system results.System
	dir    string
	// name is the container's name; image its image (kafka-exp/SYSTEM:latest)
	// and imageID that image's ID.
	name, image, imageID string
	// cpus and memory are the container's limits (docker run --cpus, --memory).
	cpus, memory string
	cg           cgroup

	stopOnce sync.Once
	stopErr  error
}

func (rt *Containers) script() string {
	return filepath.Join(rt.process.RepoDir, "scripts", "containers.sh")
}

// cmd runs scripts/containers.sh with the limits in its environment.
func (rt *Containers) cmd(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, rt.script(), args...)
	cmd.Env = append(append(os.Environ(), "CONTAINER_CPUS="+rt.cpus, "CONTAINER_MEMORY="+rt.memory), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kit: containers.sh %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Prepare installs Docker and debootstrap when missing, starts a dockerd when
// none runs (its stop runs after every other cleanup), and builds the images
// of the selected systems that are missing or stale, so that no measured step
// waits for a build.
func (rt *Containers) Prepare(ctx context.Context) error {
	if _, err := rt.cmd(ctx, nil, "install"); err != nil {
		return err
	}
	// Registered before the start, run after every other cleanup: the
	// script stops the dockerd only if it started it and no other run (or
	// container of this project) still uses it.
	rt.cleanups.AddFirst(func() {
		if out, err := rt.cmd(context.Background(), nil, "stop"); err != nil {
			rt.log.Warn("stopping dockerd", "err", err)
		} else {
			rt.log.Info("dockerd", "stop", strings.TrimSpace(out))
		}
	})
	out, err := rt.cmd(ctx, nil, "start")
	if err != nil {
		return err
	}
	rt.log.Info("dockerd", "start", strings.TrimSpace(out))
	args := []string{"build"}
	for _, sys := range rt.systems {
		args = append(args, string(sys))
	}
	if out, err = rt.cmd(ctx, nil, args...); err != nil {
		return err
	}
	rt.log.Info("container images", "build", strings.TrimSpace(out))
	return nil
}

// PackageVersions replaces the peers' versions in m, read from this machine's
// packages, with those in their images, which are what ran.
func (rt *Containers) PackageVersions(ctx context.Context, m *machine.Machine) {
	for _, v := range []struct {
		system results.System
		pkg    string
		dst    *string
	}{
		{results.ActiveMQ, "activemq", &m.ActiveMQVersion},
		{results.RabbitMQ, "rabbitmq-server", &m.RabbitMQVersion},
		{results.RabbitMQ, "erlang-base", &m.ErlangVersion},
	} {
		if !slices.Contains(rt.systems, v.system) {
			continue
		}
		out, err := rt.cmd(ctx, nil, "version", string(v.system), v.pkg)
		if err != nil {
			rt.log.Warn("package version in the image", "system", v.system, "err", err)
			continue
		}
		*v.dst = strings.TrimSpace(out)
	}
}

// Description says, for the report's testbed line, how the servers ran.
func (rt *Containers) Description() string {
	return fmt.Sprintf("every server in its own Docker container (images kafka-exp/SYSTEM built from Debian bookworm packages "+
		"by scripts/containers.sh), host network, each limited to --cpus=%s --memory=%s without swap, its data on a "+
		"bind-mounted volume; CPU time and memory read from the container's cgroup; the clients run outside, as plain processes",
		rt.cpus, rt.memory)
}

// DataDir is a subdirectory of the state directory, which also holds
// containers.sh's own files (container.name, container.log, ...).
func (rt *Containers) DataDir(dir string) string { return filepath.Join(dir, "log") }

// StartServer starts the image's static kafka-server with the same flags.
func (rt *Containers) StartServer(ctx context.Context, s ServerSpec) (Server, error) {
	return rt.start(ctx, s.System, s.Dir, nil, s.Argv[1:])
}

// InstallPeer installs only ActiveMQ, on this machine, for the client jars and
// the JDK of its driver: the servers come with their images, and RabbitMQ's
// client is our Go driver.
func (rt *Containers) InstallPeer(ctx context.Context, p PeerSpec) error {
	if p.Name != results.ActiveMQ {
		return nil
	}
	return rt.process.InstallPeer(ctx, p)
}

// StartPeer starts the peer's image, which runs scripts/peers.sh run: the same
// configuration as the process runtime.
func (rt *Containers) StartPeer(ctx context.Context, p PeerSpec) (Server, error) {
	return rt.start(ctx, p.Name, p.Dir, p.Env, nil)
}

// start starts system's container with its state under dir, env passed to
// containers.sh (ports, peers.sh settings) and args to the server, and waits
// until it serves. Its removal is registered first, so that a start that
// fails midway leaves nothing.
func (rt *Containers) start(ctx context.Context, system results.System, dir string, env, args []string) (*container, error) {
	c := &container{rt: rt, system: system, dir: dir}
	rt.cleanups.Add(func() {
		if err := c.Stop(time.Minute); err != nil {
			rt.log.Warn("stopping container", "system", system, "err", err)
		}
	})
	argv := []string{"start", string(system), dir}
	if len(args) > 0 {
		argv = append(append(argv, "--"), args...)
	}
	out, err := rt.cmd(ctx, env, argv...)
	if err != nil {
		return nil, err
	}
	rt.log.Info("container started", "system", system, "status", strings.TrimSpace(out))
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, "container."+name))
		return strings.TrimSpace(string(b))
	}
	c.name, c.image, c.imageID = read("name"), read("image"), read("image_id")
	c.cpus, c.memory = read("cpus"), read("memory")
	pid, err := strconv.Atoi(read("pid"))
	if err != nil {
		return nil, fmt.Errorf("kit: %s container: no init PID in %s", system, dir)
	}
	if c.cg, err = cgroupOf(pid); err != nil {
		return nil, err
	}
	rt.mu.Lock()
	rt.running[system] = c
	rt.mu.Unlock()
	return c, nil
}

// BeginRun resets the memory peak of the run's system's container.
func (rt *Containers) BeginRun(system results.System) {
	if c := rt.container(system); c != nil {
		if err := c.cg.resetPeak(); err != nil {
			rt.log.Warn("container memory peak", "err", err)
		}
	}
}

// EndRun records the container in the run, with the memory peak its cgroup
// recorded.
func (rt *Containers) EndRun(run *results.Run) {
	if c := rt.container(run.System); c != nil {
		r := &results.Container{Image: c.image, ImageID: c.imageID, CPUs: c.cpus, Memory: c.memory}
		r.MemoryPeakBytes, _ = c.cg.peakBytes()
		run.Container = r
	}
}

func (rt *Containers) container(system results.System) *container {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.running[system]
}

// Stop stops the container (SIGTERM, then SIGKILL after 60 s: containers.sh
// bounds it, not timeout) and removes it; its output is kept beside the
// drivers' as in the process runtime. Later calls return the first's result.
func (c *container) Stop(time.Duration) error {
	c.stopOnce.Do(func() {
		c.rt.mu.Lock()
		if c.rt.running[c.system] == c {
			delete(c.rt.running, c.system)
		}
		c.rt.mu.Unlock()
		_, c.stopErr = c.rt.cmd(context.Background(), nil, "stop", string(c.system), c.dir)
		if b, err := os.ReadFile(filepath.Join(c.dir, "container.log")); err == nil {
			name := fmt.Sprintf("%s-%s-container.log", c.system, SafeName(filepath.Base(c.dir)))
			if err := os.WriteFile(filepath.Join(c.rt.logs, name), b, 0o644); err != nil {
				c.rt.log.Warn("keeping the container's output", "err", err)
			}
		}
	})
	return c.stopErr
}

// Exited reports false: containers.sh start has waited until the server
// serves, and a container that dies shows in the runs that use it.
func (c *container) Exited() (bool, error) { return false, nil }

// CPUSeconds is the CPU time of every process in the container.
func (c *container) CPUSeconds() (float64, error) { return c.cg.CPUSeconds() }

// RSSBytes is the container's anonymous memory.
func (c *container) RSSBytes() (int64, error) { return c.cg.residentBytes() }
