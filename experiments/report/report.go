// Package report turns a result set into report.md and the figures: the paper's
// §5 numbers beside the measured ones, the ratios Kafka/ActiveMQ and
// Kafka/RabbitMQ beside the paper's claims, one figure and one generated
// conclusion per ablation. Every sentence of a conclusion is computed from the
// runs; none is written in advance, so a result that contradicts the paper is
// reported as such.
package report

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/netdb11/kafka/experiments/machine"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// Context is what the report says about the invocation besides the runs.
type Context struct {
	// Machine is where the runs happened.
	Machine machine.Machine
	// Testbed describes the testbed in words; TestbedKind is loopback or paper.
	Testbed, TestbedKind string
	// Mode is quick or full.
	Mode string
	// LinkBitsPerSec is the testbed link's rate (0: loopback).
	LinkBitsPerSec float64
	// Settings lists, one sentence each with its reason, the settings of this
	// invocation that depart from Kafka 0.7's defaults.
	Settings []string
	// Failures lists what went wrong, one line each.
	Failures []string
	// Now stamps the report (default time.Now).
	Now time.Time
}

// Write draws the figures into dir and writes dir/report.md. A figure without data
// is left out and said so; other errors are returned after the report is written.
func Write(dir string, set *results.Set, c Context) error {
	figs, ferr := WriteFigures(dir, set)
	md := Markdown(set, c, figs)
	path := filepath.Join(dir, "report.md")
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		return errors.Join(ferr, fmt.Errorf("report: %w", err))
	}
	return ferr
}

// summary of one quantity over the good runs of one configuration.
func summary(runs []results.Run, f func(results.Run) float64) stats.Summary {
	return stats.Summarize(results.Values(runs, f))
}

// sel is Set.Select for the paper's comparison.
func sel(set *results.Set, system results.System, variant results.Variant, phase results.Phase) []results.Run {
	return set.Select(results.Key{System: system, Experiment: results.Main, Variant: variant, Phase: phase})
}

// peerTx returns the transaction-variant runs of a peer.
func peerTx(set *results.Set, system results.System) []results.Run {
	var out []results.Run
	for _, r := range set.Select(results.Key{System: system, Experiment: results.Main, Phase: results.Produce}) {
		if r.Variant.Setting == results.Transactions {
			out = append(out, r)
		}
	}
	return out
}

// medianRun is the run whose throughput is the median of runs (the lower middle
// for an even count): the run drawn in time-series figures.
func medianRun(runs []results.Run) (results.Run, bool) {
	if len(runs) == 0 {
		return results.Run{}, false
	}
	s := summary(runs, results.Throughput)
	best, bestDist := runs[0], math.Inf(1)
	for _, r := range runs {
		if d := math.Abs(r.Result.MsgsPerSec - s.Median); d < bestDist {
			best, bestDist = r, d
		}
	}
	return best, true
}

// cell renders a summary for a table: "median [min–max]", or "not run".
func cell(s stats.Summary) string {
	if s.N == 0 {
		return "not run"
	}
	if s.N == 1 {
		return stats.Format(s.Median) + " (1 run)"
	}
	return fmt.Sprintf("%s [%s–%s]", stats.Format(s.Median), stats.Format(s.Min), stats.Format(s.Max))
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

// pct renders a relative change a/b-1 as a signed percentage.
func pct(a, b float64) string {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "n/a"
	}
	return fmt.Sprintf("%+.0f%%", (a/b-1)*100)
}
