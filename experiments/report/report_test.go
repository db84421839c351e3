package report

import (
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// run makes a good run with a throughput and a short time series.
func run(sys results.System, exp results.Experiment, variant results.Variant, phase results.Phase, param float64, rep int, rate float64) results.Run {
	var samples []perf.Sample
	for i := 1; i <= 4; i++ {
		samples = append(samples, perf.Sample{T: float64(i) * 0.25, Messages: int64(rate * float64(i) * 0.25)})
	}
	return results.Run{
		Key: results.Key{System: sys, Experiment: exp, Variant: variant, Phase: phase}, Param: param, Rep: rep,
		ID: results.Key{System: sys, Experiment: exp, Variant: variant, Phase: phase}.ID(rep), Config: map[string]string{"messages": "1000"},
		Result: perf.NewResult(int64(rate), int64(rate)*200, 1, samples),
	}
}

func TestReportWithoutKafka(t *testing.T) {
	set := &results.Set{}
	for rep := 1; rep <= 3; rep++ {
		set.Runs = append(set.Runs, run(results.RabbitMQ, results.Main, results.VariantOnePerSend, results.Produce, 1, rep, 10_000))
	}
	md := Markdown(set, Context{TestbedKind: "loopback", Mode: "quick"}, []Section{Comparison}, nil)
	for _, want := range []string{"| Producer, batch 1 (msg/s) | Kafka | 50,000 | not run | 0 |", "| n/a | not measured |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if regexp.MustCompile(`[^0-9.,]0× `).MatchString(md) {
		t.Errorf("a missing system must give n/a, not a zero ratio:\n%s", md)
	}
}

func TestVerdict(t *testing.T) {
	tests := []struct {
		r    stats.Ratio
		want string
	}{
		{stats.Ratio{Median: 5, Low: 3, High: 6}, "**holds** in every run"},
		{stats.Ratio{Median: 5, Low: 1, High: 6}, "**holds** at the median, not in every run"},
		{stats.Ratio{Median: 1, Low: 0.5, High: 2.5}, "**does not hold** at the median (only in the best case)"},
		{stats.Ratio{Median: 1, Low: 0.5, High: 1.5}, "**does not hold**"},
		{stats.Ratio{Median: math.NaN()}, "not measured"},
	}
	for _, tt := range tests {
		if got := verdict(tt.r, 2); got != tt.want {
			t.Errorf("verdict(%+v, 2) = %q, want %q", tt.r, got, tt.want)
		}
	}
}

func TestChange(t *testing.T) {
	a := stats.Summarize([]float64{100, 110, 120})
	b := stats.Summarize([]float64{200, 210, 220})
	if got, want := Change(a, b), "+91% (110 → 210 msg/s; ranges do not overlap)"; got != want {
		t.Errorf("change = %q, want %q", got, want)
	}
	c := stats.Summarize([]float64{105, 115, 125})
	if got := Change(a, c); !strings.Contains(got, "not distinguishable") {
		t.Errorf("overlapping ranges: %q", got)
	}
	if got := Change(stats.Summary{}, a); got != "not measured" {
		t.Errorf("empty: %q", got)
	}
}

func TestMedianRun(t *testing.T) {
	runs := []results.Run{
		run(results.Kafka, results.Main, results.Setting("x", ""), results.Produce, 0, 1, 300),
		run(results.Kafka, results.Main, results.Setting("x", ""), results.Produce, 0, 2, 100),
		run(results.Kafka, results.Main, results.Setting("x", ""), results.Produce, 0, 3, 200),
	}
	if r, ok := medianRun(runs); !ok || r.Rep != 3 {
		t.Errorf("medianRun = rep %d, want rep 3", r.Rep)
	}
	if _, ok := medianRun(nil); ok {
		t.Error("medianRun(nil) reported a run")
	}
}

// A group's heading is written once, before the first of its sections that
// is written; a section without runs is left out, heading and all.
func TestSectionGroups(t *testing.T) {
	text := func(s string) Section {
		return Section{Group: "## Group\n\n", Has: func(set *results.Set) bool { return s != "" },
			Write: func(w Printf, _ *results.Set, _ Context, _ []Fig) { w("%s\n", s) }}
	}
	md := Markdown(&results.Set{}, Context{}, []Section{text(""), text("first"), text("second")}, nil)
	if strings.Count(md, "## Group") != 1 || !strings.Contains(md, "## Group\n\nfirst\nsecond\n") {
		t.Errorf("grouped sections:\n%s", md)
	}
	if md := Markdown(&results.Set{}, Context{}, []Section{text("")}, nil); strings.Contains(md, "## Group") {
		t.Errorf("a group without a written section has a heading:\n%s", md)
	}
}
