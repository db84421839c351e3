package pipeline

import (
	"fmt"
	"math"

	"github.com/netdb11/kafka/experiments/figures"
	"github.com/netdb11/kafka/experiments/results"
)

// PaperLatency is the paper's end-to-end latency of LinkedIn's pipeline
// (§4: "about 10 seconds on average").
const PaperLatency = 10.0 // seconds

// FigureFile is the figure's name in the output directory.
const FigureFile = "fig-pipeline.png"

// Figure draws the end-to-end latency over time of both phases beside the
// paper's 10 s, and where the steady phase's latency goes: the mean
// latency to each stage per window.
func Figure(p *results.Pipeline) figures.Figure {
	if p == nil || len(p.Phases) == 0 {
		return figures.Figure{}
	}
	var e2e []figures.Series
	for _, ph := range p.Phases {
		p50 := figures.Series{Name: ph.Name + ": p50"}
		p99 := figures.Series{Name: ph.Name + ": p99"}
		for _, w := range ph.Windows {
			if w.Sent == 0 || w.P50ms == 0 {
				continue
			}
			p50.X, p50.Y = append(p50.X, w.At), append(p50.Y, w.P50ms/1000)
			p99.X, p99.Y = append(p99.X, w.At), append(p99.Y, w.P99ms/1000)
		}
		e2e = append(e2e, p50, p99)
		if ph.KilledAt > 0 {
			// Vertical marks: the mirror's SIGKILL and its restart.
			top := 0.0
			for _, w := range ph.Windows {
				top = math.Max(top, w.P99ms/1000)
			}
			e2e = append(e2e,
				figures.Series{Name: "mirror SIGKILLed", X: []float64{ph.KilledAt, ph.KilledAt}, Y: []float64{0, top}},
				figures.Series{Name: "mirror restarted", X: []float64{ph.RestartedAt, ph.RestartedAt}, Y: []float64{0, top}})
		}
	}
	panels := []figures.Panel{{Title: "End-to-end latency per audit window", XLabel: "window start (s after the load began)", YLabel: "seconds",
		Lines: e2e, HLine: PaperLatency, HLineLabel: "paper: about 10 s"}}
	ph := p.Phases[0]
	stages := []struct {
		name string
		f    func(results.PipelineWindow) float64
	}{
		{"left the producer's queue", func(w results.PipelineWindow) float64 { return w.QueuedMs }},
		{"readable on the live cluster", func(w results.PipelineWindow) float64 { return w.LiveMs }},
		{"readable on the analysis cluster", func(w results.PipelineWindow) float64 { return w.AnalysisMs }},
		{"received by the consumer", func(w results.PipelineWindow) float64 { return w.MeanMs }},
	}
	var lines []figures.Series
	for _, st := range stages {
		s := figures.Series{Name: st.name}
		for _, w := range ph.Windows {
			if v := st.f(w); w.Sent > 0 && v > 0 {
				s.X, s.Y = append(s.X, w.At), append(s.Y, v/1000)
			}
		}
		lines = append(lines, s)
	}
	panels = append(panels, figures.Panel{Title: "Where it goes (" + ph.Name + "): mean time from creation to each stage", XLabel: "window start (s after the load began)", YLabel: "seconds", Lines: lines})
	return figures.Figure{Panels: panels}
}

// Split is the mean end-to-end latency of a phase divided among the stages.
type Split struct {
	Queue, LiveFlush, Mirror, Consumer, Total float64 // seconds
}

// SplitOf divides a phase's mean latency: the producer's queue, then the
// live cluster (its flush, mostly), the mirror hop (the mirror's consumer
// backoff, its sends, the analysis cluster's flush), the consumer's backoff.
func SplitOf(t results.PipelineWindow) Split {
	return Split{Queue: t.QueuedMs / 1000, LiveFlush: (t.LiveMs - t.QueuedMs) / 1000, Mirror: (t.AnalysisMs - t.LiveMs) / 1000,
		Consumer: (t.MeanMs - t.AnalysisMs) / 1000, Total: t.MeanMs / 1000}
}

func s1(ms float64) string { return fmt.Sprintf("%.1f", ms/1000) }

// Write writes the report's section: the setup, the figure, the latency and
// its split beside the configured bounds, and the audit table per window.
func Write(w func(format string, args ...any), p *results.Pipeline, figs []string) {
	c := p.Config
	w("## Two datacenters: the pipeline of §4\n\n")
	w("Paper §4: a Kafka cluster in each user-facing datacenter; the analysis datacenter's cluster pulls the data across with embedded consumers; the whole pipeline averages about 10 seconds end to end (\"without too much tuning\"); an audit counts, per producer, topic and time window, what was sent and checks what arrived. Here: %s. %s front-end producers in the live datacenter each send %s messages/s of %s bytes (in audit envelopes, `producer/audit`) to topic `pageviews-*`, queued as 0.7's async producer (`batch.size=%s`, `queue.time=%s`); `kafka-mirror` in the analysis datacenter copies them (and the audit topic) from the live cluster with %s streams, committing every `autocommit.interval.ms=%s` only what the analysis cluster has; a consumer there (`kafka-audit --follow`, pausing `fetcher.backoff.ms=%s` when it finds nothing) counts every message against the audit's events, per %s window. Both brokers run 0.7's flush defaults (`log.flush.interval=%s`, `log.default.flush.interval.ms=%s`, checked every %s ms). Each phase's load runs %s; in the second, the mirror is SIGKILLed %s in and restarted %s later.\n\n",
		p.Testbed, c["producers"], c["rate_per_producer"], c["message_size"], c["batch.size"], c["queue.time"], c["mirror_streams"], c["autocommit.interval.ms"],
		c["fetcher.backoff.ms"], c["audit_window"], c["log.flush.interval"], c["log.default.flush.interval.ms"], c["log.default.flush.scheduler.interval.ms"],
		c["phase"], c["kill_at"], c["downtime"])
	for _, f := range figs {
		w("![Two datacenters: end-to-end latency and where it goes](%s)\n\n", f)
	}
	w("| Phase | Messages sent | received | missing | duplicates | mean (s) | p50 | p90 | p99 | max | paper | load average |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, ph := range p.Phases {
		t := ph.Total
		w("| %s | %d | %d | %d | %d | %s | %s | %s | %s | %s | about 10 | %s |\n", ph.Name, t.Sent, t.Received, t.Missing, t.Duplicates, s1(t.MeanMs), s1(t.P50ms), s1(t.P90ms), s1(t.P99ms), s1(t.MaxMs), ph.Load)
	}
	w("\nWhere the time goes (means over every message of the phase, in seconds): the producers measure how long each message waited in their queue; two more observers (`kafka-audit --follow --poll=10ms`) note when each message became readable on the live and on the analysis cluster; the consumer when it received it. A broker exposes a message only once flushed (§3.1), so \"readable\" is after the flush.\n\n")
	w("| Phase | producer queue | live cluster (flush) | mirror hop (its consumer's backoff, its sends, the analysis cluster's flush) | consumer backoff | total | bounds from the settings |\n|---|---|---|---|---|---|---|\n")
	for _, ph := range p.Phases {
		s := SplitOf(ph.Total)
		w("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | queue ≤ min(batch.size / rate, queue.time) = %s; flush ≤ %s + %s ms; mirror ≤ %s ms + a flush; consumer ≤ %s ms |\n",
			ph.Name, s.Queue, s.LiveFlush, s.Mirror, s.Consumer, s.Total, queueBound(c), c["log.default.flush.interval.ms"], c["log.default.flush.scheduler.interval.ms"], c["fetcher.backoff.ms"], c["fetcher.backoff.ms"])
	}
	w("\n### The audit, per window (at the analysis cluster, after the mirror caught up)\n\n")
	w("Windows start at the time shown (seconds after the phase's load began; the first may start before it). Sent is what the producers' monitoring events announce; missing and duplicates are counted exactly from the envelopes' sequence numbers (`broker/audit`).\n\n")
	w("| Phase | window (s) | sent | received | missing | duplicates | p50 (s) | p99 (s) | verdict |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, ph := range p.Phases {
		for _, win := range ph.Windows {
			verdict := "complete"
			switch {
			case win.Missing > 0:
				verdict = fmt.Sprintf("**%d LOST**", win.Missing)
			case win.Duplicates > 0:
				verdict = "complete, with duplicates"
			}
			w("| %s | %.0f | %d | %d | %d | %d | %s | %s | %s |\n", ph.Name, win.At, win.Sent, win.Received, win.Missing, win.Duplicates, s1(win.P50ms), s1(win.P99ms), verdict)
		}
	}
	w("\n**Conclusion.** %s\n\n", Conclude(p))
}

func queueBound(c map[string]string) string {
	var batch, rate float64
	fmt.Sscan(c["batch.size"], &batch)
	fmt.Sscan(c["rate_per_producer"], &rate)
	if rate <= 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f s", batch/rate) + " (" + c["queue.time"] + ")"
}

// Conclude states the result from the numbers.
func Conclude(p *results.Pipeline) string {
	if len(p.Phases) == 0 {
		return "The pipeline did not run."
	}
	var s string
	st := p.Phases[0]
	for _, ph := range p.Phases {
		if ph.Error != "" {
			s += fmt.Sprintf("Phase %q failed: %s. ", ph.Name, ph.Error)
		}
	}
	t := st.Total
	sp := SplitOf(t)
	s += fmt.Sprintf("With 0.7's defaults and no tuning, the steady pipeline's end-to-end latency averaged %.1f s (p50 %.1f s, p99 %.1f s), beside the paper's \"about 10 seconds\". ", t.MeanMs/1000, t.P50ms/1000, t.P99ms/1000)
	type part struct {
		name string
		v    float64
	}
	parts := []part{{"the producer's queue", sp.Queue}, {"the live cluster's flush", sp.LiveFlush}, {"the mirror hop", sp.Mirror}, {"the consumer's backoff", sp.Consumer}}
	big := parts[0]
	for _, q := range parts {
		if q.v > big.v {
			big = q
		}
	}
	s += fmt.Sprintf("Almost all of it is waiting, not work: %s took the most (%.1f s on average); the flush interval counts twice (once per cluster), and the mirror adds its consumer's backoff to the analysis cluster's flush. Every one of these is a setting, so the latency is a choice of batching against requests, as the paper says. ", big.name, big.v)
	var lost int64
	for _, ph := range p.Phases {
		lost += ph.Total.Missing
	}
	if lost == 0 {
		s += "The audit found every message in every window of both phases: nothing was lost. "
	} else {
		s += fmt.Sprintf("**The audit counted %d messages missing.** ", lost)
	}
	if len(p.Phases) > 1 {
		k := p.Phases[1]
		s += fmt.Sprintf("With the mirror SIGKILLed %.0f s in and restarted %.0f s later, %d of %d messages arrived twice (those the killed mirror had copied after its last commit) and %d were missing: at-least-once across the mirror, duplicates but no loss", k.KilledAt, k.RestartedAt-k.KilledAt, k.Total.Duplicates, k.Total.Sent, k.Total.Missing)
		if k.Total.P99ms > 0 && !math.IsNaN(k.Total.P99ms) {
			s += fmt.Sprintf("; the outage showed as a latency peak (p99 %.1f s, max %.1f s) until the restarted mirror caught up", k.Total.P99ms/1000, k.Total.MaxMs/1000)
		}
		s += "."
	}
	return s
}
