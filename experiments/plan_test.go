package experiments

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/experiments/activemqperf"
	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/results"
)

// recordingRuntime stands in for scripts/peers.sh: it records "NAME ACTION"
// for every install and start, and refuses to start a peer not installed.
type recordingRuntime struct {
	events    *[]string
	installed map[results.System]bool
}

func (rt recordingRuntime) DataDir(dir string) string { return dir }

func (rt recordingRuntime) StartServer(context.Context, kit.ServerSpec) (kit.Server, error) {
	return nil, errors.New("no broker in this test")
}

func (rt recordingRuntime) InstallPeer(_ context.Context, p kit.PeerSpec) error {
	*rt.events = append(*rt.events, string(p.Name)+" install")
	rt.installed[p.Name] = true
	return nil
}

func (rt recordingRuntime) StartPeer(_ context.Context, p kit.PeerSpec) (kit.Server, error) {
	*rt.events = append(*rt.events, string(p.Name)+" start")
	if !rt.installed[p.Name] {
		return nil, errors.New(string(p.Name) + " started before it was installed")
	}
	return stoppedServer{}, nil
}

// stoppedServer is a Server that has nothing to stop or measure.
type stoppedServer struct{}

func (stoppedServer) Stop(time.Duration) error       { return nil }
func (stoppedServer) Exited() (bool, error)          { return false, nil }
func (stoppedServer) CPUSeconds() (float64, error)   { return 0, nil }
func (stoppedServer) RSSBytes() (int64, error)       { return 0, nil }
func (stoppedServer) DiskWriteBytes() (int64, error) { return 0, nil }

// TestPeerPlanInstallsFirst runs the plan's steps for both peers with
// scripts/peers.sh and the ActiveMQ compiler recorded instead of run, and
// checks that each peer is installed before anything needs its package: on a
// fresh machine the ActiveMQ driver compiles against the package's client
// jars, so compiling first skipped half of the paper's comparison.
func TestPeerPlanInstallsFirst(t *testing.T) {
	var events []string // "activemq install", "activemq compile", ...
	rt := recordingRuntime{events: &events, installed: map[results.System]bool{}}
	l := &lab{
		cfg:  Config{Config: results.Config{Systems: []results.System{results.ActiveMQ, results.RabbitMQ}, Repeats: 1}},
		tb:   &kit.Testbed{Kind: kit.Loopback, Broker: kit.Local("broker"), Client: kit.Local("client")},
		rt:   rt,
		work: t.TempDir(),
		log:  slog.New(slog.DiscardHandler),
		compileJMS: func(context.Context, string) (*activemqperf.Driver, error) {
			events = append(events, "activemq compile")
			if !rt.installed[results.ActiveMQ] {
				return nil, errors.New("client jar missing: compiled before the install")
			}
			return &activemqperf.Driver{}, nil
		},
	}
	started := map[results.System]bool{}
	for _, s := range plan(l) {
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

// TestQuickPlanRepeatsMainFigures: --quick measures each of the main figures
// five times (issue 14), Kafka's producers and hot and cold consumers and
// each peer's runs, and the ablations three times.
func TestQuickPlanRepeatsMainFigures(t *testing.T) {
	l := &lab{cfg: DefaultConfig(Quick), tb: &kit.Testbed{Kind: kit.Loopback, Broker: kit.Local("broker"), Client: kit.Local("client")},
		log: slog.New(slog.DiscardHandler)}
	count := map[string]int{}
	for _, s := range plan(l) {
		label := s.label
		if i := strings.Index(label, " (rep "); i >= 0 {
			label = label[:i]
		}
		count[label]++
	}
	for _, label := range []string{
		"kafka: producer batch=1", "kafka: producer batch=50", "kafka: consumer", "kafka: consumer, cold cache",
		"activemq: producer, one message per send", "activemq: consumer", "rabbitmq: producer, one message per send", "rabbitmq: consumer",
	} {
		if count[label] != 5 {
			t.Errorf("%q runs %d times in --quick, want 5", label, count[label])
		}
	}
	if n := count["flush ablation, log.flush.interval=1"]; n != 3 {
		t.Errorf("the flush ablation runs %d times per interval in --quick, want 3", n)
	}
}
