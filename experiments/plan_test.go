package experiments

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"

	"github.com/netdb11/kafka/experiments/activemqperf"
	"github.com/netdb11/kafka/experiments/results"
)

// TestPeerPlanInstallsFirst runs the plan's steps for both peers with
// scripts/peers.sh and the ActiveMQ compiler recorded instead of run, and
// checks that each peer is installed before anything needs its package: on a
// fresh machine the ActiveMQ driver compiles against the package's client
// jars, so compiling first skipped half of the paper's comparison.
func TestPeerPlanInstallsFirst(t *testing.T) {
	var events []string // "activemq install", "activemq compile", ...
	installed := map[string]bool{}
	h := &harness{
		cfg:    Config{Config: results.Config{Systems: []results.System{results.ActiveMQ, results.RabbitMQ}, Repeats: 1}},
		tb:     &Testbed{Kind: Loopback, Broker: localHost{"broker"}, Client: localHost{"client"}},
		work:   t.TempDir(),
		log:    slog.New(slog.DiscardHandler),
		failed: map[results.System]error{},
		peersHook: func(_ context.Context, _ []string, action, name, _ string) (string, error) {
			events = append(events, name+" "+action)
			if action == "install" {
				installed[name] = true
			}
			if action == "start" && !installed[name] {
				return "", errors.New(name + " started before it was installed")
			}
			return "", nil
		},
		compileHook: func(context.Context, string) (*activemqperf.Driver, error) {
			events = append(events, "activemq compile")
			if !installed[string(results.ActiveMQ)] {
				return nil, errors.New("client jar missing: compiled before the install")
			}
			return &activemqperf.Driver{}, nil
		},
	}
	started := map[results.System]bool{}
	for _, s := range h.plan() {
		if started[s.system] || s.system == "" {
			continue // measuring needs the real servers; the order is settled by then
		}
		if err := s.run(t.Context()); err != nil {
			t.Fatalf("step %q: %v", s.label, err)
		}
		started[s.system] = slices.Contains(events, string(s.system)+" start")
	}
	want := []string{
		"activemq install", "activemq compile", "activemq start",
		"rabbitmq install", "rabbitmq start",
	}
	if !slices.Equal(events, want) {
		t.Errorf("peer actions in plan order:\n got %q\nwant %q", events, want)
	}
}
