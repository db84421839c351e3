package report

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/experiments/machine"
	"github.com/netdb11/kafka/experiments/results"
)

// produced is a batch-50 producer run of repetition rep whose log grew at
// rate(t) messages per second, sampled every 100 ms for seconds.
func produced(rep int, seconds float64, rate func(t float64) float64) results.Run {
	var samples []perf.Sample
	n := 0.0
	for t := 0.1; t <= seconds+1e-9; t += 0.1 {
		n += rate(t) * 0.1
		samples = append(samples, perf.Sample{T: t, Messages: int64(n)})
	}
	k := results.Key{System: results.Kafka, Experiment: results.Main, Variant: results.VariantBatch(50), Phase: results.Produce}
	return results.Run{ID: k.ID(rep), Key: k, Param: 50, Rep: rep, Config: map[string]string{},
		Result: perf.NewResult(int64(n), int64(n)*200, seconds, samples), StorageApparentBytesPerMsg: 209}
}

func constant(r float64) func(float64) float64 { return func(float64) float64 { return r } }

// The disk takes 300 MB/s: 1.435M messages of 209 bytes per second.
var testMachine = machine.Machine{Cores: 2, DiskWriteMBps: 300, LoopbackMBps: 1200, LoopbackProducerMBps: 1100,
	LoopbackFetchMBps: 1500, DirtyLimitBytes: 4 << 30, Disk: &machine.Disk{BufferedWriteMBps: 300, DirectWriteMBps: 1000, ReadMBps: 800}}

func TestProducerPhase(t *testing.T) {
	tests := []struct {
		name string
		run  results.Run
		kind string
	}{
		{"faster than the disk, no knee", produced(1, 1, constant(3.5e6)), KindBurst},
		{"at the disk's rate", produced(2, 2, constant(1.4e6)), KindSustained},
		{"burst, then the disk", produced(3, 4, func(t float64) float64 { return map[bool]float64{true: 3.5e6, false: 1.4e6}[t <= 1.5] }), KindBoth},
		{"slower after a knee, still faster than the disk", produced(5, 4, func(t float64) float64 { return map[bool]float64{true: 4.2e6, false: 3.2e6}[t <= 1.5] }), KindBurst},
		{"slowed below the disk's rate", produced(4, 4, func(t float64) float64 { return map[bool]float64{true: 5e5, false: 3e5}[t <= 1.5] }), KindSlowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ProducerPhase(tt.run, 209, 300)
			if p.Kind != tt.kind {
				t.Errorf("kind %q, want %q (split %+v)", p.Kind, tt.kind, p.Split)
			}
		})
	}
	if p := ProducerPhase(produced(1, 1, constant(3.5e6)), 209, 0); p.Kind != KindUnknown {
		t.Errorf("without a disk limit: %q, want %q", p.Kind, KindUnknown)
	}
}

// TestExplainRangeProducerPhases is the six runs: the first fill
// the page cache, the later run at the disk's rate. The range must be
// explained by the phase, not called noise.
func TestExplainRangeProducerPhases(t *testing.T) {
	set := &results.Set{Machine: testMachine}
	for rep, r := range []float64{3.5e6, 3.9e6, 3.69e6} {
		set.Runs = append(set.Runs, produced(rep+1, 0.6, constant(r)))
	}
	set.Runs = append(set.Runs, produced(4, 4, func(t float64) float64 { return map[bool]float64{true: 3.5e6, false: 1.4e6}[t <= 1] }))
	set.Runs = append(set.Runs, produced(5, 1.5, constant(1.37e6)))
	lim := LimitsOf(set.Machine)
	got := ExplainRange(factsOf(set, set.Runs, lim), lim.DiskWrite, 209, 2)
	for _, want := range []string{
		"(slow: rep 4 and 5 at",
		"phase: rep 1, 2 and 3 ran entirely in the burst",
		"rep 4 and 5 ran at the disk's pace (rep 4 crossed a knee after 1.",
		"of the disk's 300 MB/s",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("explanation lacks %q:\n%s", want, got)
		}
	}
	md := Markdown(set, Context{Machine: set.Machine, TestbedKind: "loopback", Mode: "quick"}, []Section{Comparison}, nil)
	for _, want := range []string{
		"## Kafka against the machine's limits",
		"What Kafka's numbers above are: whole-run rates of the producer (batch 50: 3 burst, 1 burst, then sustained, 1 sustained;",
		"| Producer, batch 50 | whole run: 3 burst, 1 burst, then sustained, 1 sustained |",
		"| Producer, batch 50 | sustained: after the knee (runs that crossed one) | 1,400,000 (1 run) |",
		"- rep 4: 3,500,000 msg/s until 1.",
		"- rep 5: sustained: 1,370,000 msg/s, 95% of the disk's write limit",
		"## Ranges wider than 1.5×",
		"- **Kafka, main, batch=50, produce:** 2.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(md)
	}
}

func facts(rates, other, load, resident []float64) []RunFacts {
	var f []RunFacts
	for i, r := range rates {
		f = append(f, RunFacts{Rep: i + 1, Rate: r, KneeT: math.NaN(), After: math.NaN(), Dirty: math.NaN(),
			OtherCPU: other[i], Load: load[i], CacheResident: resident[i]})
	}
	return f
}

func TestExplainRange(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		f    []RunFacts
		want []string // empty: no explanation
	}{
		{"narrow", facts([]float64{1e6, 1.2e6, 1.4e6}, []float64{0, 1, 0}, []float64{1, 9, 1}, []float64{1, 1, 1}), nil},
		{"other processes", facts([]float64{5e6, 5.2e6, 2.5e6, 4.9e6}, []float64{0.1, 0.05, 0.9, 0.2}, []float64{2, 2.1, 2.2, 2}, []float64{1, 1, 1, 1}),
			[]string{"2.08× (slow: rep 3 at 2,500,000 msg/s; fast: rep 1, 2 and 4 at 4,900,000–5,200,000 msg/s)", "CPU: while rep 3 ran, other processes took 0.90 of the 2 cores, against 0.05–0.20 during rep 1, 2 and 4"}},
		{"page cache and load", facts([]float64{5e6, 2e6}, []float64{nan, nan}, []float64{1, 4}, []float64{1, 0.4}),
			[]string{"page cache: rep 2 found only 40% of its log cached", "load: rep 2 began at a load average of 4.0, rep 1 at 1.0"}},
		{"nothing separates", facts([]float64{5e6, 2e6, 4.8e6}, []float64{0.3, 0.3, 0.5}, []float64{3, 3, 3}, []float64{1, 1, 1}),
			[]string{"no recorded condition separates the slow runs from the fast ones (load average 3.0, other processes' CPU 0.30–0.50 cores, log cached 100%); these data do not say why."}},
		{"other processes as a tendency", facts([]float64{5e6, 4e6, 3e6, 2e6, 4.5e6}, []float64{0.5, 0.7, 0.8, 0.9, 0.75}, []float64{3, 3, 3, 3, 3}, []float64{1, 1, 1, 1, 1}),
			[]string{"CPU, as a tendency rather than a clean split: the more of the 2 cores other processes took during a run (0.50–0.90), the slower it went (Spearman's ρ = -0.90 over 5 runs)"}},
		{"nothing recorded", facts([]float64{5e6, 2e6}, []float64{nan, nan}, []float64{nan, nan}, []float64{nan, nan}),
			[]string{"(nothing recorded); these data do not say why."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ExplainRange(tt.f, 300, 209, 2)
			if len(tt.want) == 0 && got != "" {
				t.Errorf("explained a narrow range: %s", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("explanation lacks %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestParseTop(t *testing.T) {
	out := `File: kafka-producer-perf-test
Type: cpu
Showing nodes accounting for 1.2s, 80% of 1.5s total
      flat  flat%   sum%        cum   cum%
     0.50s 33.33% 33.33%      0.50s 33.33%  syscall.Syscall6
     0.30s 20.00% 53.33%      0.40s 26.67%  hash/crc32.ieeeCLMUL
     0.10s  6.67% 60.00%      0.10s  6.67%  runtime.memmove
`
	got := parseTop(out, 2)
	if len(got) != 2 || got[0] != "33.33% syscall.Syscall6" || got[1] != "20.00% hash/crc32.ieeeCLMUL" {
		t.Errorf("parseTop = %q", got)
	}
}

func TestProfilesAppendix(t *testing.T) {
	set := &results.Set{}
	r := produced(1, 1, constant(1e6))
	set.Runs = append(set.Runs, r)
	var b strings.Builder
	w := Printf(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) })
	writeProfiles(w, set, "/out")
	if !strings.Contains(b.String(), "No CPU profiles were written") {
		t.Errorf("without profiles the appendix must say so:\n%s", b.String())
	}
	set.Runs[0].Config["cpu_profile"] = "logs/x.cpu.pprof"
	old := TopFunctions
	defer func() { TopFunctions = old }()
	var asked string
	TopFunctions = func(p string, n int) ([]string, error) {
		asked = p
		if strings.Contains(p, "bad") {
			return nil, errors.New("not a profile")
		}
		return []string{"40.00% syscall.Syscall6", "10.00% runtime.memmove"}, nil
	}
	b.Reset()
	writeProfiles(w, set, "/out")
	if asked != "/out/logs/x.cpu.pprof" || !strings.Contains(b.String(), "- **main, batch=50, produce** (rep 1)\n  - client (`logs/x.cpu.pprof`): 40.00% syscall.Syscall6; 10.00% runtime.memmove.") {
		t.Errorf("asked for %q; appendix:\n%s", asked, b.String())
	}
	set.Runs[0].Config["broker_cpu_profile"] = "logs/bad.cpu.pprof"
	b.Reset()
	writeProfiles(w, set, "/out")
	if !strings.Contains(b.String(), "  - broker (`logs/bad.cpu.pprof`): could not be read: not a profile") {
		t.Errorf("a broken broker profile must be reported:\n%s", b.String())
	}
}

func TestSpearman(t *testing.T) {
	for _, tt := range []struct {
		xs, ys []float64
		want   float64
	}{
		{[]float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}, 1},
		{[]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, -1},
		{[]float64{1, 2, 3}, []float64{5, 5, 5}, math.NaN()},
		{[]float64{1, 2, 2, 3}, []float64{1, 2, 2, 3}, 1},
	} {
		got := Spearman(tt.xs, tt.ys)
		if !(math.IsNaN(tt.want) && math.IsNaN(got)) && math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("Spearman(%v, %v) = %v, want %v", tt.xs, tt.ys, got, tt.want)
		}
	}
}
