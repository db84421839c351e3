package experiments

import (
	"slices"
	"testing"

	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/results"
)

// Every part has its own experiment name and figure files, steps and a
// section that writes; the ablations are the parts marked so, in order, and
// the plan follows the list: each selected part's steps, in its place.
func TestPartsList(t *testing.T) {
	names := map[results.Experiment]bool{}
	files := map[string]bool{}
	var ablations []results.Experiment
	for _, p := range parts {
		if p.name == "" || names[p.name] {
			t.Errorf("part %q: empty or repeated name", p.name)
		}
		names[p.name] = true
		if p.steps == nil || p.section.Write == nil {
			t.Errorf("part %q: no steps or no section", p.name)
		}
		for _, f := range p.section.Figures {
			if f.File == "" || files[f.File] || f.Build == nil {
				t.Errorf("part %q: figure %q empty, repeated or not drawn", p.name, f.File)
			}
			files[f.File] = true
		}
		if p.ablation {
			ablations = append(ablations, p.name)
		}
	}
	if !slices.Equal(ablations, AllAblations) || len(AllAblations) != 8 || len(DefaultAblations) != 7 {
		t.Errorf("AllAblations = %v, the ablation parts are %v", AllAblations, ablations)
	}
	if !names[results.Main] {
		t.Error("no part for the paper's comparison")
	}

	// Kafka with one ablation: the comparison's Kafka steps, then that
	// ablation's, and nothing of the other parts.
	cfg := DefaultConfig(Quick)
	cfg.Systems, cfg.Ablations, cfg.Repeats, cfg.MainRepeats = []results.System{results.Kafka}, []results.Experiment{flushExp}, 1, 1
	cfg.FlushIntervals = []int{1, 10}
	l := &lab{cfg: cfg, tb: &kit.Testbed{Kind: kit.Loopback}}
	var labels []string
	for _, s := range plan(l) {
		labels = append(labels, s.label)
	}
	want := []string{
		"kafka: start broker (rep 1)", "kafka: producer batch=1 (rep 1)", "kafka: producer batch=50 (rep 1)",
		"kafka: consumer (rep 1)", "kafka: consumer, cold cache (rep 1)", "kafka: stop broker (rep 1)",
		"flush ablation, log.flush.interval=1: start broker", "flush ablation, log.flush.interval=1 (rep 1)",
		"flush ablation, log.flush.interval=1: stop broker",
		"flush ablation, log.flush.interval=10: start broker", "flush ablation, log.flush.interval=10 (rep 1)",
		"flush ablation, log.flush.interval=10: stop broker",
	}
	if !slices.Equal(labels, want) {
		t.Errorf("plan:\n got %q\nwant %q", labels, want)
	}
	// Without Kafka no ablation runs, whatever --ablations says.
	cfg.Systems = []results.System{results.RabbitMQ}
	for _, s := range plan(&lab{cfg: cfg, tb: &kit.Testbed{Kind: kit.Loopback}}) {
		if s.system == results.Kafka {
			t.Errorf("a Kafka step without Kafka: %q", s.label)
		}
	}
}
