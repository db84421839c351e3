package experiments

import (
	"context"
	"fmt"
	"strings"

	"github.com/netdb11/kafka/experiments/figures"
	"github.com/netdb11/kafka/experiments/report"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// compressionExp names the runs of the part.
const compressionExp results.Experiment = "compression"

// compressionAblation is the compression ablation: compressed message sets (Kafka 0.7's
// compression.codec), stored and served as they are. Payloads are log-like
// lines, not random bytes, so the ratio means something. Each run produces at
// batch 50, measures the bytes stored per message and reads the topic back
// (the consumer decompresses).
var compressionAblation = ablation(compressionSteps, report.Ablation{
	Experiment: compressionExp,
	Title:      "compression",
	What:       "Kafka 0.7 compresses whole message sets (`compression.codec` 1 gzip, 2 snappy); the broker stores and serves them as they are. Payloads are log-like lines.",
	Figure:     report.Figure{File: "fig-ablation-compression.png", Title: "Ablation: compression of log-like messages", Build: compressionFigure},
	Conclude:   concludeCompression,
}, payloadDriverBin)

func compressionSteps(l *lab) []step {
	b := &broker{name: "compression"}
	payloads := &logPayloads{}
	p := []step{
		l.startStep("compression ablation: start broker", b),
		{label: "compression ablation: payloads", system: results.Kafka, run: func(context.Context) (err error) {
			payloads.path, err = writeLogLines(l.work, l.cfg.MessageSize, 100_000)
			return err
		}},
	}
	msgs := max(l.cfg.AblationMessages/4, 1)
	for _, codec := range l.cfg.Codecs {
		v := results.Setting("codec", codec)
		param := float64(codecID(codec))
		for rep := 1; rep <= l.cfg.Repeats; rep++ {
			written := &produced{}
			p = append(p,
				l.produceStep(fmt.Sprintf("compression ablation, %s: producer (rep %d)", v, rep), b, kafkaRun(compressionExp, v, param, results.Produce, rep),
					produceSpec{topic: fmt.Sprintf("comp-%s-r%d", codec, rep), messages: msgs, batch: 50, codec: codec, payloads: payloads}, written),
				l.consumeStep(fmt.Sprintf("compression ablation, %s: consumer (rep %d)", v, rep), b, kafkaRun(compressionExp, v, param, results.Consume, rep), written, 0))
		}
	}
	return append(p, stopStep("compression ablation: stop broker", b))
}

func compressionFigure(set *results.Set) figures.Figure {
	cats, size := report.VariantBars(set, compressionExp, results.Produce, results.Storage)
	if len(cats) == 0 {
		return figures.Figure{}
	}
	_, prod := report.VariantBars(set, compressionExp, results.Produce, results.Throughput)
	_, cons := report.VariantBars(set, compressionExp, results.Consume, results.Throughput)
	prod.Name, cons.Name = "producer", "consumer"
	return figures.Figure{Panels: []figures.Panel{
		{Title: "Bytes on disk per message", YLabel: "bytes/message", Categories: cats, Bars: []figures.BarSeries{size},
			HLine: 200, HLineLabel: "payload (200 B)"},
		{Title: "Throughput", YLabel: "messages/s", Categories: cats, Bars: []figures.BarSeries{prod, cons}},
	}}
}

func concludeCompression(set *results.Set) string {
	none := report.VariantSummary(set, compressionExp, results.Setting("codec", "none"), results.Produce, results.Storage)
	if none.N == 0 {
		return "Not measured without compression; nothing to compare with."
	}
	s := fmt.Sprintf("Uncompressed, a message took %s bytes on disk.", stats.Format(none.Median))
	runs := set.Select(results.Key{System: results.Kafka, Experiment: compressionExp, Phase: results.Produce})
	if len(runs) > 0 && !strings.HasPrefix(runs[0].Config["payload"], "log-like") {
		s += " These payloads were not log-like (" + runs[0].Config["payload"] + "), so the ratios say little about logs."
	}
	for _, codec := range []string{"gzip", "snappy"} {
		v := results.Setting("codec", codec)
		size := report.VariantSummary(set, compressionExp, v, results.Produce, results.Storage)
		if size.N == 0 {
			continue
		}
		p := report.Change(report.VariantSummary(set, compressionExp, results.Setting("codec", "none"), results.Produce, results.Throughput),
			report.VariantSummary(set, compressionExp, v, results.Produce, results.Throughput))
		c := report.Change(report.VariantSummary(set, compressionExp, results.Setting("codec", "none"), results.Consume, results.Throughput),
			report.VariantSummary(set, compressionExp, v, results.Consume, results.Throughput))
		s += fmt.Sprintf(" With %s: %s bytes (%s× smaller); producer rate %s; consumer rate %s.",
			codec, stats.Format(size.Median), stats.Format(none.Median/size.Median), p, c)
	}
	return s
}
