package experiments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/experiments/figures"
	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/report"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// partitionsExp names the runs of the part.
const partitionsExp results.Experiment = "partitions"

// partitionsAblation is the partitions ablation. Paper §3 and §3.2: a topic is split into
// partitions, the unit of parallelism. One producer spreads messages over P
// partitions; then P consumers, one per partition, read them concurrently and
// the run reports their combined throughput.
var partitionsAblation = ablation(partitionsSteps, report.Ablation{
	Experiment: partitionsExp,
	Title:      "partitions",
	What:       "Paper §3.2: partitions are the unit of parallelism. One producer spreads messages over P partitions; P consumers read them at once.",
	Figure:     report.Figure{File: "fig-ablation-partitions.png", Title: "Ablation: throughput against the number of partitions", Build: partitionsFigure},
	Conclude:   concludePartitions,
})

func partitionsSteps(l *lab) []step {
	var p []step
	for _, n := range l.cfg.PartitionCounts {
		v := results.SettingInt("partitions", int64(n))
		label := "partitions ablation, " + v.String()
		b := &broker{name: fmt.Sprintf("partitions-%d", n), props: map[string]string{"num.partitions": strconv.Itoa(n)}}
		p = append(p, l.startStep(label+": start broker", b))
		for rep := 1; rep <= l.cfg.Repeats; rep++ {
			written := &produced{}
			run := kafkaRun(partitionsExp, v, float64(n), results.Consume, rep)
			p = append(p,
				l.produceStep(fmt.Sprintf("%s: producer (rep %d)", label, rep), b, kafkaRun(partitionsExp, v, float64(n), results.Produce, rep),
					produceSpec{topic: fmt.Sprintf("part-r%d", rep), messages: l.cfg.AblationMessages, batch: 50, codec: "none"}, written),
				step{label: fmt.Sprintf("%s: %d consumers (rep %d)", label, n, rep), system: results.Kafka, run: func(ctx context.Context) error {
					kb, err := b.started()
					if err != nil {
						return err
					}
					return l.measure(ctx, run, func(r *results.Run) error { return l.consumeAllPartitions(ctx, kb, written, n, r) })
				}})
		}
		p = append(p, stopStep(label+": stop broker", b))
	}
	return p
}

// consumeAllPartitions reads what in holds with one consumer per partition,
// all at once; the combined throughput is all messages over the slowest
// consumer's time.
func (l *lab) consumeAllPartitions(ctx context.Context, b *kafkaBroker, in *produced, n int, run *results.Run) error {
	topic, produced := in.topic, in.messages
	if produced == 0 {
		return errors.New("experiments: nothing was produced to consume")
	}
	// Messages are spread at random; all have the same size, so each
	// partition's share follows from its log's size.
	_, total := b.topicBytes(topic)
	per := float64(total) / float64(produced)
	if per <= 0 {
		return fmt.Errorf("experiments: topic %s has no data", topic)
	}
	cpu0, _ := b.srv.CPUSeconds()
	subs := make([]results.Run, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		dirApp := int64(0)
		if _, a, err := kit.DiskUsage(filepath.Join(b.logDir, fmt.Sprintf("%s-%d", topic, i))); err == nil {
			dirApp = a
		}
		msgs := int64(math.Round(float64(dirApp) / per))
		if msgs == 0 {
			continue
		}
		subs[i].ID = fmt.Sprintf("%s/partition=%d", run.ID, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = l.kafkaConsume(ctx, b, topic, i, msgs, &subs[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var msgs, bytes int64
	var secs float64
	for _, s := range subs {
		msgs += s.Result.Messages
		bytes += s.Result.Bytes
		secs = max(secs, s.Result.Seconds)
	}
	run.Result = perf.NewResult(msgs, bytes, secs, nil)
	if cpu1, err := b.srv.CPUSeconds(); err == nil {
		run.BrokerCPUSeconds = cpu1 - cpu0
	}
	run.Config = mergeConfig(subs[0].Config, map[string]string{"consumers": strconv.Itoa(n), "partition": "all, one consumer each"})
	run.BrokerRSSBytes, _ = b.srv.RSSBytes()
	return nil
}

func partitionsFigure(set *results.Set) figures.Figure {
	prod := set.Select(results.Key{System: results.Kafka, Experiment: partitionsExp, Phase: results.Produce})
	cons := set.Select(results.Key{System: results.Kafka, Experiment: partitionsExp, Phase: results.Consume})
	if len(prod)+len(cons) == 0 {
		return figures.Figure{}
	}
	return figures.Figure{Panels: []figures.Panel{{
		Title: "Throughput against partitions", XLabel: "partitions", YLabel: "messages/s",
		Lines: []figures.Series{
			report.Sweep("one producer, batch 50", prod, report.Identity, results.Throughput),
			report.Sweep("one consumer per partition, combined", cons, report.Identity, results.Throughput),
		},
	}}}
}

func concludePartitions(set *results.Set) string {
	params, prod := report.SweepSummaries(set, partitionsExp, results.Produce)
	_, cons := report.SweepSummaries(set, partitionsExp, results.Consume)
	if len(params) < 2 {
		return "Not enough partition counts to compare."
	}
	last := len(params) - 1
	s := fmt.Sprintf("From %s to %s partitions, one producer's rate changed by %s", report.Num(params[0]), report.Num(params[last]), report.Change(prod[0], prod[last]))
	if len(cons) == len(params) {
		s += fmt.Sprintf(", and the combined rate of one consumer per partition by %s", report.Change(cons[0], cons[last]))
	}
	s += "."
	if len(cons) == len(params) && cons[0].Median > 0 {
		s += fmt.Sprintf(" For %s× the partitions (and consumers), the combined consumer rate scaled %s×; linear scaling would be %s×.",
			report.Num(params[last]/params[0]), stats.Format(cons[last].Median/cons[0].Median), report.Num(params[last]/params[0]))
	}
	return s
}
