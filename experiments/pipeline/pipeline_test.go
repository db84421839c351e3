package pipeline

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest"
	caudit "github.com/netdb11/kafka/consumer/audit"
	"github.com/netdb11/kafka/experiments/results"
)

func synthetic(missing int64) *results.Pipeline {
	win := func(at float64, sent, dup, miss int64, p50 float64) results.PipelineWindow {
		return results.PipelineWindow{At: at, Tally: caudit.Tally{Sent: sent, Received: sent - miss + dup, Missing: miss, Duplicates: dup},
			LatencyMs: caudit.LatencyMs{P50ms: p50, P90ms: p50 + 1000, P99ms: p50 + 2000, MaxMs: p50 + 2500, MeanMs: p50},
			QueuedMs:  1000, LiveMs: 3000, AnalysisMs: p50 - 500}
	}
	return &results.Pipeline{Testbed: "somewhere", Config: DefaultConfig().describeFor(),
		Phases: []results.PipelinePhase{
			{Name: "steady", Windows: []results.PipelineWindow{win(0, 100, 0, 0, 6000), win(5, 100, 0, missing, 7000)},
				Total: win(0, 200, 0, missing, 6500)},
			{Name: "mirror SIGKILLed and restarted", KilledAt: 25, RestartedAt: 35, Windows: []results.PipelineWindow{win(0, 100, 40, 0, 9000)},
				Total: win(0, 100, 40, 0, 9000)},
		}}
}

// TestReportSaysWhatHappened: the section reports the split, the audit per
// window with its verdict, and a conclusion that changes with the numbers.
func TestReportSaysWhatHappened(t *testing.T) {
	var b strings.Builder
	w := func(format string, args ...any) { b.WriteString(sprintf(format, args...)) }
	Write(w, synthetic(0), []string{FigureFile})
	out := b.String()
	for _, want := range []string{"## Two datacenters", FigureFile, "| steady | 200 | 200 | 0 | 0 | 6.5 |", "| steady | 1.0 | 2.0 |", "complete, with duplicates",
		"nothing was lost", "40 of 100 messages arrived twice"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	Write(w, synthetic(3), nil)
	if out := b.String(); !strings.Contains(out, "**3 LOST**") || !strings.Contains(out, "counted 3 messages missing") {
		t.Errorf("a loss is not reported:\n%s", out)
	}
	fig := Figure(synthetic(0))
	if len(fig.Panels) != 2 || len(fig.Panels[0].Lines) != 6 || len(fig.Panels[1].Lines) != 4 || len(fig.Panels[0].Lines[0].X) != 2 {
		t.Errorf("figure %+v", fig)
	}
	if s := SplitOf(synthetic(0).Phases[0].Total); s.Queue != 1 || s.LiveFlush != 2 || s.Mirror != 3 || s.Consumer != 0.5 {
		t.Errorf("split %+v", s)
	}
}

// TestPipelineLosesNothing runs the pipeline small and fast on loopback
// (real ZooKeepers, brokers, mirror, producers and consumers as processes):
// the steady phase delivers every message exactly once, and with the mirror
// SIGKILLed and restarted nothing is missing.
func TestPipelineLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two ZooKeepers and the pipeline's processes")
	}
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		t.Fatalf("ZooKeeper is not installed (scripts/zookeeper.sh start installs it): %v", err)
	}
	bin := brokertest.Build(t,
		"github.com/netdb11/kafka/broker/cmd/kafka-server", "github.com/netdb11/kafka/broker/cmd/kafka-mirror",
		"github.com/netdb11/kafka/consumer/cmd/kafka-audit", "github.com/netdb11/kafka/producer/cmd/kafka-audit-producer",
		"github.com/netdb11/kafka/producer/cmd/kafka-console-producer")
	cfg := DefaultConfig()
	cfg.Bin, cfg.Dir, cfg.Local = bin, t.TempDir(), true
	cfg.Phase, cfg.KillAt, cfg.Downtime = 8*time.Second, 3*time.Second, time.Second
	cfg.Window, cfg.QueueTime, cfg.BatchSize = 2*time.Second, 500*time.Millisecond, 50
	cfg.FlushIntervalTime, cfg.FlushScheduler, cfg.ConsumerBackoff = 500*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	cfg.CommitInterval = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Phases) != 2 {
		t.Fatalf("%d phases", len(res.Phases))
	}
	want := int64(float64(cfg.Producers) * cfg.Rate * cfg.Phase.Seconds())
	for i, ph := range res.Phases {
		tot := ph.Total
		t.Logf("%s: sent %d, received %d, missing %d, duplicates %d, mean %.0f ms, p99 %.0f ms", ph.Name, tot.Sent, tot.Received, tot.Missing, tot.Duplicates, tot.MeanMs, tot.P99ms)
		if ph.Error != "" {
			t.Errorf("%s: %s", ph.Name, ph.Error)
		}
		if tot.Sent < want*8/10 || tot.Missing != 0 {
			t.Errorf("%s: sent %d (want about %d), missing %d", ph.Name, tot.Sent, want, tot.Missing)
		}
		if i == 0 && (tot.Duplicates != 0 || tot.Received != tot.Sent) {
			t.Errorf("steady: %d duplicates, %d of %d received", tot.Duplicates, tot.Received, tot.Sent)
		}
		if tot.MeanMs <= 0 || tot.P99ms < tot.P50ms {
			t.Errorf("%s: latency mean %v p50 %v p99 %v", ph.Name, tot.MeanMs, tot.P50ms, tot.P99ms)
		}
		for _, w := range ph.Windows {
			if w.Missing != 0 {
				t.Errorf("%s: window at %.0f s: %d missing", ph.Name, w.At, w.Missing)
			}
		}
	}
	if res.Phases[1].KilledAt == 0 || res.Phases[1].RestartedAt <= res.Phases[1].KilledAt {
		t.Errorf("the mirror was not killed and restarted: %+v", res.Phases[1])
	}
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
