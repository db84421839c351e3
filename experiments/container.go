package experiments

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/netdb11/kafka/experiments/results"
)

// Runtimes: how the systems under test run. The clients (the perf tools and
// the peers' drivers) always run as plain processes on the client host, the
// same binaries in both runtimes, so only the server side changes.
const (
	// ProcessRuntime runs every server as a plain process on this machine.
	ProcessRuntime = "process"
	// ContainerRuntime runs every server in its own Docker container
	// (scripts/containers.sh), with identical CPU and memory limits.
	ContainerRuntime = "container"
)

// Runtimes lists the valid values of Config.Runtime.
var Runtimes = []string{ProcessRuntime, ContainerRuntime}

// container is one system under test running in its own container, started
// by scripts/containers.sh with its state directory mounted at the same path.
type container struct {
	system results.System
	dir    string
	// name is the container's name; image its image (kafka-exp/SYSTEM:latest)
	// and imageID that image's ID.
	name, image, imageID string
	// cpus and memory are the container's limits (docker run --cpus, --memory).
	cpus, memory string
	cg           cgroup
}

func (h *harness) containersScript() string {
	return filepath.Join(h.cfg.RepoDir, "scripts", "containers.sh")
}

// containersCmd runs scripts/containers.sh with the limits of the
// configuration in its environment.
func (h *harness) containersCmd(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, h.containersScript(), args...)
	cmd.Env = append(append(os.Environ(),
		"CONTAINER_CPUS="+h.cfg.ContainerCPUs,
		"CONTAINER_MEMORY="+h.cfg.ContainerMemory), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("experiments: containers.sh %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// prepareContainers installs Docker and debootstrap when missing, starts a
// dockerd when none runs (and registers its stop, after every container's),
// and builds the images of the selected systems that are missing or stale, so
// that no measured step waits for a build.
func (h *harness) prepareContainers(ctx context.Context) error {
	if _, err := h.containersCmd(ctx, nil, "install"); err != nil {
		return err
	}
	out, err := h.containersCmd(ctx, nil, "start")
	if err != nil {
		return err
	}
	if strings.Contains(out, "dockerd started") {
		// The first cleanup registered runs last: after every container is gone.
		h.cleanups = append([]func(){func() {
			if out, err := h.containersCmd(context.Background(), nil, "stop"); err != nil {
				h.log.Warn("stopping dockerd", "err", err)
			} else {
				h.log.Info("dockerd", "stop", strings.TrimSpace(out))
			}
		}}, h.cleanups...)
	}
	args := []string{"build"}
	for _, sys := range h.cfg.Systems {
		args = append(args, string(sys))
	}
	out, err = h.containersCmd(ctx, nil, args...)
	if err != nil {
		return err
	}
	h.log.Info("container images", "build", strings.TrimSpace(out))
	return nil
}

// startContainer starts system's container with its state under dir, env
// passed to containers.sh (ports, peers.sh settings) and args to the server,
// waits until it serves, and registers its removal.
func (h *harness) startContainer(ctx context.Context, system results.System, dir string, env, args []string) (*container, error) {
	h.cleanups = append(h.cleanups, func() {
		if _, err := h.containersCmd(context.Background(), nil, "stop", string(system), dir); err != nil {
			h.log.Warn("stopping container", "system", system, "err", err)
		}
	})
	argv := []string{"start", string(system), dir}
	if len(args) > 0 {
		argv = append(append(argv, "--"), args...)
	}
	out, err := h.containersCmd(ctx, env, argv...)
	if err != nil {
		return nil, err
	}
	h.log.Info("container started", "system", system, "status", strings.TrimSpace(out))
	c := &container{system: system, dir: dir}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, "container."+name))
		return strings.TrimSpace(string(b))
	}
	c.name, c.image, c.imageID = read("name"), read("image"), read("image_id")
	c.cpus, c.memory = read("cpus"), read("memory")
	pid, err := strconv.Atoi(read("pid"))
	if err != nil {
		return nil, fmt.Errorf("experiments: %s container: no init PID in %s", system, dir)
	}
	if c.cg, err = cgroupOf(pid); err != nil {
		return nil, err
	}
	h.containers[system] = c
	return c, nil
}

// stopContainer stops the container (SIGTERM, then SIGKILL after 60 s) and
// removes it; its output stays in dir/container.log.
func (h *harness) stopContainer(ctx context.Context, c *container) error {
	if c == nil {
		return nil
	}
	if h.containers[c.system] == c {
		delete(h.containers, c.system)
	}
	_, err := h.containersCmd(context.WithoutCancel(ctx), nil, "stop", string(c.system), c.dir)
	// The server's output, kept beside the drivers' as in the process runtime.
	if b, rerr := os.ReadFile(filepath.Join(c.dir, "container.log")); rerr == nil {
		name := fmt.Sprintf("%s-%s-container.log", c.system, unsafeName.ReplaceAllString(filepath.Base(c.dir), "_"))
		if werr := os.WriteFile(filepath.Join(h.logs, name), b, 0o644); werr != nil {
			h.log.Warn("keeping the container's output", "err", werr)
		}
	}
	return err
}

// record describes the container for a run's result, with the memory peak its
// cgroup recorded.
func (c *container) record() *results.Container {
	r := &results.Container{Image: c.image, ImageID: c.imageID, CPUs: c.cpus, Memory: c.memory}
	r.MemoryPeakBytes, _ = c.cg.peakBytes()
	return r
}

// containersDescription says, for the report's testbed line, how the servers ran.
func (h *harness) containersDescription() string {
	return fmt.Sprintf("every server in its own Docker container (images kafka-exp/SYSTEM built from Debian bookworm packages "+
		"by scripts/containers.sh), host network, each limited to --cpus=%s --memory=%s without swap, its data on a "+
		"bind-mounted volume; CPU time and memory read from the container's cgroup; the clients run outside, as plain processes",
		h.cfg.ContainerCPUs, h.cfg.ContainerMemory)
}

// meter reads the CPU time and resident memory of a server: a process's from
// /proc, a container's (every process in it) from its cgroup.
type meter struct {
	pid func() int
	cg  *cgroup
}

func (m meter) cpuSeconds() (float64, error) {
	if m.cg != nil {
		return m.cg.cpuSeconds()
	}
	return cpuSeconds(m.pid())
}

// residentBytes is a process's RSS or a container's anonymous memory.
func (m meter) residentBytes() (int64, error) {
	if m.cg != nil {
		return m.cg.residentBytes()
	}
	return rssBytes(m.pid())
}
