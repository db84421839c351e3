package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/experiments/figures"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// Summary summarises one quantity over the good runs of one configuration.
func Summary(runs []results.Run, f func(results.Run) float64) stats.Summary {
	return stats.Summarize(results.Values(runs, f))
}

// medianRun is the run whose throughput is the median of runs (the lower middle
// for an even count): the run drawn in time-series figures.
func medianRun(runs []results.Run) (results.Run, bool) {
	if len(runs) == 0 {
		return results.Run{}, false
	}
	s := Summary(runs, results.Throughput)
	best, bestDist := runs[0], math.Inf(1)
	for _, r := range runs {
		if d := math.Abs(r.Result.MsgsPerSec - s.Median); d < bestDist {
			best, bestDist = r, d
		}
	}
	return best, true
}

// timeSeries is the throughput over time of the median run of runs.
func timeSeries(name string, runs []results.Run) (figures.Series, bool) {
	r, ok := medianRun(runs)
	if !ok || len(r.Result.Samples) == 0 {
		return figures.Series{}, false
	}
	s := figures.Series{Name: name}
	for _, rate := range perf.Rates(r.Result.Samples) {
		s.X = append(s.X, rate.T)
		s.Y = append(s.Y, rate.MsgsPerSec)
	}
	return s, true
}

func bar(category string, s stats.Summary) figures.Bar {
	if s.N == 0 {
		return figures.Bar{Category: category, Value: math.NaN(), Low: math.NaN(), High: math.NaN()}
	}
	return figures.Bar{Category: category, Value: s.Median, Low: s.Min, High: s.Max}
}

// Cell renders a summary for a table: "median [min–max]", or "not run".
func Cell(s stats.Summary) string {
	if s.N == 0 {
		return "not run"
	}
	if s.N == 1 {
		return stats.Format(s.Median) + " (1 run)"
	}
	return fmt.Sprintf("%s [%s–%s]", stats.Format(s.Median), stats.Format(s.Min), stats.Format(s.Max))
}

// CellNaN is Cell, with "–" where nothing was measured.
func CellNaN(s stats.Summary) string {
	if s.N == 0 {
		return "–"
	}
	return Cell(s)
}

func ratioCell(r stats.Ratio) string {
	if math.IsNaN(r.Median) {
		return "n/a"
	}
	return fmt.Sprintf("%s× [%s–%s]", stats.Format(r.Median), stats.Format(r.Low), stats.Format(r.High))
}

// verdict compares a measured ratio with a claimed minimum.
func verdict(r stats.Ratio, atLeast float64) string {
	switch {
	case math.IsNaN(r.Median):
		return "not measured"
	case r.Low >= atLeast:
		return "**holds** in every run"
	case r.Median >= atLeast:
		return "**holds** at the median, not in every run"
	case r.High >= atLeast:
		return "**does not hold** at the median (only in the best case)"
	default:
		return "**does not hold**"
	}
}

// Change describes to relative to from, and whether the runs can tell them
// apart.
func Change(from, to stats.Summary) string {
	if from.N == 0 || to.N == 0 {
		return "not measured"
	}
	sep := "ranges do not overlap"
	switch {
	case from.N < 2 || to.N < 2:
		sep = "single runs: no spread to judge by"
	case from.Overlaps(to):
		sep = "ranges overlap: not distinguishable in these runs"
	}
	return fmt.Sprintf("%s (%s → %s msg/s; %s)", Pct(to.Median, from.Median), stats.Format(from.Median), stats.Format(to.Median), sep)
}

// Pct renders a relative change a/b-1 as a signed percentage.
func Pct(a, b float64) string {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "n/a"
	}
	return fmt.Sprintf("%+.0f%%", (a/b-1)*100)
}

// PctOf renders a fraction's median as a percentage, or "n/a".
func PctOf(s stats.Summary) string {
	if s.N == 0 || math.IsNaN(s.Median) {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*s.Median)
}

// Num renders a parameter: whole numbers without decimals.
func Num(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1000 {
		return strconv.FormatInt(int64(x), 10)
	}
	return stats.Format(x) // whole numbers >= 1000 come out grouped, without decimals
}

// Messages renders a message count with its noun: "1 message", "100 messages".
func Messages(n float64) string {
	if n == 1 {
		return "1 message"
	}
	return Num(n) + " messages"
}

// HumanSize renders a byte count in GiB, MiB or bytes.
func HumanSize(b float64) string {
	switch {
	case b >= 1<<30:
		return Num(b/(1<<30)) + " GiB"
	case b >= 1<<20:
		return Num(b/(1<<20)) + " MiB"
	}
	return Num(b) + " B"
}

// NaNIfZero makes an unmeasured (zero) quantity NaN, which summaries skip.
func NaNIfZero(x float64) float64 {
	if x == 0 {
		return math.NaN()
	}
	return x
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func join(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// Sweep turns runs of one phase into a line over their Param, with spreads.
func Sweep(name string, runs []results.Run, x func(float64) float64, y func(results.Run) float64) figures.Series {
	s := figures.Series{Name: name}
	for _, p := range results.Params(runs) {
		var at []results.Run
		for _, r := range runs {
			if r.Param == p {
				at = append(at, r)
			}
		}
		sum := Summary(at, y)
		s.X = append(s.X, x(p))
		s.Y = append(s.Y, sum.Median)
		s.YLow = append(s.YLow, sum.Min)
		s.YHigh = append(s.YHigh, sum.Max)
	}
	return s
}

// Identity is Sweep's x for parameters drawn as they are.
func Identity(x float64) float64 { return x }

// SweepSummaries summarises a phase of a Kafka sweep at each parameter.
func SweepSummaries(set *results.Set, exp results.Experiment, phase results.Phase) ([]float64, []stats.Summary) {
	runs := set.Select(results.Key{System: results.Kafka, Experiment: exp, Phase: phase})
	params := results.Params(runs)
	out := make([]stats.Summary, len(params))
	for i, p := range params {
		var at []results.Run
		for _, r := range runs {
			if r.Param == p {
				at = append(at, r)
			}
		}
		out[i] = Summary(at, results.Throughput)
	}
	return params, out
}

// VariantSummary summarises one quantity over Kafka's runs of one variant
// and phase of an experiment.
func VariantSummary(set *results.Set, exp results.Experiment, variant results.Variant, phase results.Phase, f func(results.Run) float64) stats.Summary {
	return Summary(set.Select(results.Key{System: results.Kafka, Experiment: exp, Variant: variant, Phase: phase}), f)
}

// VariantBars draws one bar per variant of a Kafka experiment's phase, in
// the order the variants ran; it returns their names as categories.
func VariantBars(set *results.Set, exp results.Experiment, phase results.Phase, f func(results.Run) float64) ([]string, figures.BarSeries) {
	runs := set.Select(results.Key{System: results.Kafka, Experiment: exp, Phase: phase})
	var cats []string
	var bs figures.BarSeries
	for _, v := range results.Variants(runs) {
		cats = append(cats, v.String())
		bs.Bars = append(bs.Bars, bar(v.String(), Summary(set.Select(results.Key{System: results.Kafka, Experiment: exp, Variant: v, Phase: phase}), f)))
	}
	return cats, bs
}

// CPUPerGB is the broker's CPU seconds per GiB of payload moved.
func CPUPerGB(r results.Run) float64 {
	if r.Result.Bytes == 0 || r.BrokerCPUSeconds == 0 {
		return math.NaN()
	}
	return r.BrokerCPUSeconds / (float64(r.Result.Bytes) / (1 << 30))
}

// RSSMB is the broker's RSS in MiB, NaN when unmeasured.
func RSSMB(r results.Run) float64 {
	if r.BrokerRSSBytes == 0 {
		return math.NaN()
	}
	return float64(r.BrokerRSSBytes) / (1 << 20)
}
