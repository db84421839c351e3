package experiments

import (
	"fmt"
	"strconv"

	"github.com/netdb11/kafka/experiments/figures"
	"github.com/netdb11/kafka/experiments/report"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// flushExp names the runs of the part.
const flushExp results.Experiment = "flush"

// flushAblation is the flush ablation. Paper §3.1: the broker flushes the log to disk only
// every N messages (log.flush.interval); the sweep shows what flushing more
// often costs the producer at batch 50.
var flushAblation = ablation(flushSteps, report.Ablation{
	Experiment: flushExp,
	Title:      "flush interval",
	What:       "Paper §3.1: the broker flushes the log every N messages (or on a timer), not per message. The producer at batch 50 against `log.flush.interval`.",
	Figure:     report.Figure{File: "fig-ablation-flush.png", Title: "Ablation: producer throughput against log.flush.interval", Build: flushFigure},
	Conclude:   concludeFlush,
})

func flushSteps(l *lab) []step {
	var p []step
	for _, n := range l.cfg.FlushIntervals {
		v := results.SettingInt("log.flush.interval", int64(n))
		label := "flush ablation, " + v.String()
		b := &broker{name: fmt.Sprintf("flush-%d", n), props: map[string]string{"log.flush.interval": strconv.Itoa(n)}}
		p = append(p, l.startStep(label+": start broker", b))
		for rep := 1; rep <= l.cfg.Repeats; rep++ {
			p = append(p, l.produceStep(fmt.Sprintf("%s (rep %d)", label, rep), b, kafkaRun(flushExp, v, float64(n), results.Produce, rep),
				produceSpec{topic: fmt.Sprintf("flush-r%d", rep), messages: l.cfg.FlushMessages, batch: 50, codec: "none"}, nil))
		}
		p = append(p, stopStep(label+": stop broker", b))
	}
	return p
}

func flushFigure(set *results.Set) figures.Figure {
	runs := set.Select(results.Key{System: results.Kafka, Experiment: flushExp, Phase: results.Produce})
	if len(runs) == 0 {
		return figures.Figure{}
	}
	return figures.Figure{Panels: []figures.Panel{{
		Title: "Producer (batch 50) against flush interval", XLabel: "log.flush.interval (messages)", YLabel: "messages/s",
		LogX: true, Lines: []figures.Series{report.Sweep("Kafka producer", runs, report.Identity, results.Throughput)},
	}}}
}

func concludeFlush(set *results.Set) string {
	params, sums := report.SweepSummaries(set, flushExp, results.Produce)
	if len(params) < 2 {
		return "Not enough flush intervals to compare."
	}
	first, last := sums[0], sums[len(sums)-1]
	s := fmt.Sprintf("Flushing every %s instead of every %s messages changed the producer's rate by %s.",
		report.Messages(params[0]), report.Num(params[len(params)-1]), report.Change(last, first))
	best := 0
	for i := range sums {
		if sums[i].Median > sums[best].Median {
			best = i
		}
	}
	// The smallest interval within 10% of the best.
	for i := range sums {
		if sums[i].Median >= 0.9*sums[best].Median {
			s += fmt.Sprintf(" From an interval of %s on, the rate is within 10%% of the best (%s msg/s).", report.Messages(params[i]), stats.Format(sums[best].Median))
			break
		}
	}
	return s
}
