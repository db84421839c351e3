package experiments

import (
	"fmt"

	"github.com/netdb11/kafka/experiments/figures"
	"github.com/netdb11/kafka/experiments/report"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// batchExp names the runs of the part.
const batchExp results.Experiment = "batch"

// batchAblation is the batch ablation. Paper §3.1 and §5: the producer sends a set of messages
// per request; the sweep goes from 1 to 1000 messages per request, on one
// broker.
var batchAblation = ablation(batchSteps, report.Ablation{
	Experiment: batchExp,
	Title:      "batch size",
	What:       "Paper §3.1/§5: the producer sends a set of messages per request. Batch sizes from 1 to 1000.",
	Figure:     report.Figure{File: "fig-ablation-batch.png", Title: "Ablation: producer throughput against batch size", Build: batchFigure},
	Conclude:   concludeBatch,
})

func batchSteps(l *lab) []step {
	b := &broker{name: "batch"}
	p := []step{l.startStep("batch ablation: start broker", b)}
	for _, n := range l.cfg.BatchSizes {
		v := results.VariantBatch(n)
		// Small batches are slow: fewer messages keep each run short.
		msgs := min(l.cfg.AblationMessages, l.cfg.KafkaBatch1Messages*int64(n))
		for rep := 1; rep <= l.cfg.Repeats; rep++ {
			p = append(p, l.produceStep(fmt.Sprintf("batch ablation, %s (rep %d)", v, rep), b, kafkaRun(batchExp, v, float64(n), results.Produce, rep),
				produceSpec{topic: fmt.Sprintf("batch-%d-r%d", n, rep), messages: msgs, batch: n, codec: "none"}, nil))
		}
	}
	return append(p, stopStep("batch ablation: stop broker", b))
}

func batchFigure(set *results.Set) figures.Figure {
	runs := set.Select(results.Key{System: results.Kafka, Experiment: batchExp, Phase: results.Produce})
	if len(runs) == 0 {
		return figures.Figure{}
	}
	return figures.Figure{Panels: []figures.Panel{{
		Title: "Producer throughput against batch size", XLabel: "messages per produce request", YLabel: "messages/s",
		LogX: true, LogY: true, Lines: []figures.Series{report.Sweep("Kafka producer", runs, report.Identity, results.Throughput)},
	}}}
}

func concludeBatch(set *results.Set) string {
	params, sums := report.SweepSummaries(set, batchExp, results.Produce)
	if len(params) < 2 {
		return "Not enough batch sizes to compare."
	}
	best := 0
	for i := range sums {
		if sums[i].Median > sums[best].Median {
			best = i
		}
	}
	s := fmt.Sprintf("The producer's rate rose from %s msg/s at batch %s to %s msg/s at batch %s (%s×).",
		stats.Format(sums[0].Median), report.Num(params[0]), stats.Format(sums[best].Median), report.Num(params[best]),
		stats.Format(sums[best].Median/sums[0].Median))
	for i := range sums {
		if sums[i].Median >= 0.9*sums[best].Median {
			if i < best {
				s += fmt.Sprintf(" Batches of %s already reach 90%% of that.", report.Num(params[i]))
			}
			break
		}
	}
	return s
}
