package experiments

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
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
	// Command returns a command that runs argv on this host.
	Command(ctx context.Context, argv ...string) *exec.Cmd
	// Local reports whether the host shares the harness's process namespace, so
	// that /proc/PID of a started command is that process.
	Local() bool
}

// localHost runs commands directly on this machine.
type localHost struct{ name string }

func (h localHost) Name() string { return h.name }
func (h localHost) Addr() string { return "127.0.0.1" }
func (h localHost) Local() bool  { return true }
func (h localHost) Command(ctx context.Context, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

// testbedHost runs commands inside a host of scripts/testbed.sh (a network
// namespace pinned to its CPUs) through `testbed.sh exec HOST -- CMD...`.
type testbedHost struct {
	script, name, addr string
}

func (h testbedHost) Name() string { return h.name }
func (h testbedHost) Addr() string { return h.addr }

// Local is true: the testbed's hosts are namespaces of this machine, and
// `testbed.sh exec` ends by exec'ing the command, so its PID is the command's.
func (h testbedHost) Local() bool { return true }
func (h testbedHost) Command(ctx context.Context, argv ...string) *exec.Cmd {
	args := append([]string{"exec", h.name, "--"}, argv...)
	return exec.CommandContext(ctx, h.script, args...)
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

	script string
}

// Testbed kinds.
const (
	Loopback = "loopback"
	Paper    = "paper"
)

// StartTestbed prepares the testbed of the given kind. For Paper it brings up
// scripts/testbed.sh's two hosts joined by a 1 Gbit link (paper §5), and Close
// takes them down again.
func StartTestbed(ctx context.Context, kind, repoDir string) (*Testbed, error) {
	switch kind {
	case Loopback:
		return &Testbed{Kind: kind, Broker: localHost{"broker"}, Client: localHost{"client"},
			Description: "loopback: broker and clients on this machine, over 127.0.0.1, sharing its CPUs"}, nil
	case Paper:
	default:
		return nil, fmt.Errorf("experiments: unknown testbed %q (want loopback or paper)", kind)
	}
	script := filepath.Join(repoDir, "scripts", "testbed.sh")
	tb := &Testbed{Kind: kind, LinkBitsPerSec: 1e9, script: script}
	if _, err := runScript(ctx, script, "up", "--link=1gbit", "--hosts=broker,client"); err != nil {
		return nil, err
	}
	var hosts [2]testbedHost
	for i, name := range []string{"broker", "client"} {
		addr, err := runScript(ctx, script, "addr", name)
		if err != nil {
			return nil, errors.Join(err, tb.Close(context.WithoutCancel(ctx)))
		}
		hosts[i] = testbedHost{script: script, name: name, addr: strings.TrimSpace(addr)}
	}
	tb.Broker, tb.Client = hosts[0], hosts[1]
	status, _ := runScript(ctx, script, "status")
	tb.Description = "paper: broker and client hosts in network namespaces joined by a 1 Gbit link " +
		"(scripts/testbed.sh), one core each; " + strings.Join(strings.Fields(status), " ")
	return tb, nil
}

// Close takes down what StartTestbed made.
func (tb *Testbed) Close(ctx context.Context) error {
	if tb.Kind != Paper {
		return nil
	}
	_, err := runScript(ctx, tb.script, "down")
	return err
}

func runScript(ctx context.Context, script string, args ...string) (string, error) {
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("experiments: %s %s: %w: %s", script, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}
