package experiments

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/netdb11/kafka/experiments/figures"
	"github.com/netdb11/kafka/experiments/report"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// growthExp names the runs of the part.
const growthExp results.Experiment = "growth"

// growthAblation is the growth ablation. Paper §3.1 and §5: performance does not degrade as the
// log grows. The broker's log is filled to each size in turn; at each, a
// producer probe writes a new topic and a consumer probe reads the big one,
// and the broker's RSS is recorded (the broker caches nothing itself: paper
// §3.1).
var growthAblation = ablation(growthSteps, report.Ablation{
	Experiment: growthExp,
	Title:      "log growth",
	What:       "Paper §3.1/§5: performance does not degrade with data size, and the broker caches nothing itself. Throughput and RSS with the log at each size.",
	Figure:     report.Figure{File: "fig-ablation-growth.png", Title: "Ablation: throughput and broker RSS as the log grows", Build: growthFigure},
	Conclude:   concludeGrowth,
})

func growthSteps(l *lab) []step {
	b := &broker{name: "growth"}
	big := &produced{topic: "growth"} // the log that grows; messages counts all filled so far
	p := []step{l.startStep("growth ablation: start broker", b)}
	// The consumer probe reads the big log from its start: no more than its
	// smallest size holds.
	readMsgs := l.cfg.GrowthProbeMessages
	if len(l.cfg.GrowthSizes) > 0 {
		readMsgs = min(readMsgs, slices.Min(l.cfg.GrowthSizes)/int64(l.cfg.MessageSize+kafkaOverhead))
	}
	for _, size := range l.cfg.GrowthSizes {
		v := results.Setting("log", humanBytes(size))
		p = append(p, step{label: "growth ablation: fill log to " + humanBytes(size), system: results.Kafka, run: func(ctx context.Context) error {
			kb, err := b.started()
			if err != nil {
				return err
			}
			n, err := l.fillLog(ctx, kb, big.topic, size)
			big.messages += n
			return err
		}})
		for rep := 1; rep <= l.cfg.Repeats; rep++ {
			p = append(p,
				l.produceStep(fmt.Sprintf("growth ablation, %s: producer (rep %d)", v, rep), b, kafkaRun(growthExp, v, float64(size), results.Produce, rep),
					produceSpec{topic: fmt.Sprintf("probe-%d-r%d", size, rep), messages: l.cfg.GrowthProbeMessages, batch: 50, codec: "none"}, nil),
				l.consumeStep(fmt.Sprintf("growth ablation, %s: consumer (rep %d)", v, rep), b, kafkaRun(growthExp, v, float64(size), results.Consume, rep),
					big, readMsgs))
		}
	}
	return append(p, stopStep("growth ablation: stop broker", b))
}

// fillLog produces to topic until its log holds at least size bytes, and returns
// how many messages it added.
func (l *lab) fillLog(ctx context.Context, b *kafkaBroker, topic string, size int64) (int64, error) {
	_, have := b.topicBytes(topic)
	if have >= size {
		return 0, nil
	}
	msgs := (size - have + int64(l.cfg.MessageSize+kafkaOverhead) - 1) / int64(l.cfg.MessageSize+kafkaOverhead)
	var r results.Run
	r.ID = "kafka/growth/fill-" + humanBytes(size)
	start := time.Now()
	err := l.kafkaProduce(ctx, b, produceSpec{topic: topic, messages: msgs, batch: 200, codec: "none"}, &r)
	l.log.Info("filled log", "topic", topic, "bytes", size, "seconds", time.Since(start).Seconds(), "err", err)
	return r.Result.Messages, err
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dB", n)
}

func growthFigure(set *results.Set) figures.Figure {
	prod := set.Select(results.Key{System: results.Kafka, Experiment: growthExp, Phase: results.Produce})
	cons := set.Select(results.Key{System: results.Kafka, Experiment: growthExp, Phase: results.Consume})
	if len(prod)+len(cons) == 0 {
		return figures.Figure{}
	}
	cats, p := report.VariantBars(set, growthExp, results.Produce, results.Throughput)
	_, c := report.VariantBars(set, growthExp, results.Consume, results.Throughput)
	_, rss := report.VariantBars(set, growthExp, results.Produce, report.RSSMB)
	p.Name, c.Name, rss.Name = "producer", "consumer", "broker RSS"
	return figures.Figure{Panels: []figures.Panel{
		{Title: "Throughput at each log size", YLabel: "messages/s", Categories: cats, Bars: []figures.BarSeries{p, c}},
		{Title: "Broker resident memory", YLabel: "RSS (MiB)", Categories: cats, Bars: []figures.BarSeries{rss}},
	}}
}

func concludeGrowth(set *results.Set) string {
	prodRuns := set.Select(results.Key{System: results.Kafka, Experiment: growthExp, Phase: results.Produce})
	params := results.Params(prodRuns)
	if len(params) < 2 {
		return "Not enough log sizes to compare."
	}
	at := func(phase results.Phase, p float64, f func(results.Run) float64) stats.Summary {
		var rs []results.Run
		for _, r := range set.Select(results.Key{System: results.Kafka, Experiment: growthExp, Phase: phase}) {
			if r.Param == p {
				rs = append(rs, r)
			}
		}
		return report.Summary(rs, f)
	}
	lo, hi := params[0], params[len(params)-1]
	s := fmt.Sprintf("With the log at %s instead of %s, the producer's rate changed by %s and the consumer's by %s.",
		report.HumanSize(hi), report.HumanSize(lo), report.Change(at(results.Produce, lo, results.Throughput), at(results.Produce, hi, results.Throughput)),
		report.Change(at(results.Consume, lo, results.Throughput), at(results.Consume, hi, results.Throughput)))
	rlo, rhi := at(results.Produce, lo, report.RSSMB), at(results.Produce, hi, report.RSSMB)
	if rlo.N > 0 && rhi.N > 0 {
		s += fmt.Sprintf(" The broker's RSS was %s MiB and %s MiB", stats.Format(rlo.Median), stats.Format(rhi.Median))
		if rhi.Median > 2*rlo.Median && rhi.Median-rlo.Median > 50 {
			s += ": it grew with the log."
		} else {
			s += ": it does not grow with the log, whose data stays in the page cache, not in the broker."
		}
	}
	return s
}
