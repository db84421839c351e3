package report

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/experiments/figures"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// Fig is a figure written for the report.
type Fig struct {
	// Key identifies the figure ("producer", "ablation-batch").
	Key string
	// File is the PNG's name inside the output directory.
	File string
	// Title is the figure's caption.
	Title string
}

// figSpec builds one figure from a set.
type figSpec struct {
	key         string
	file, title string
	build       func(*results.Set) figures.Figure
}

var figSpecs = []figSpec{
	{"producer", "fig-producer.png", "Producer throughput: over time (median run) and per configuration (the paper's producer figure, §5)", producerFigure},
	{"consumer", "fig-consumer.png", "Consumer throughput: over time (median run) and per system (the paper's consumer figure, §5)", consumerFigure},
	{"storage", "fig-storage.png", "Disk space per 200-byte message", storageFigure},
	{string(results.Sendfile), "fig-ablation-sendfile.png", "Ablation: sendfile vs read+write on the fetch path", sendfileFigure},
	{string(results.Flush), "fig-ablation-flush.png", "Ablation: producer throughput against log.flush.interval", flushFigure},
	{string(results.Batch), "fig-ablation-batch.png", "Ablation: producer throughput against batch size", batchFigure},
	{string(results.Compression), "fig-ablation-compression.png", "Ablation: compression of log-like messages", compressionFigure},
	{string(results.Partitions), "fig-ablation-partitions.png", "Ablation: throughput against the number of partitions", partitionsFigure},
	{string(results.Growth), "fig-ablation-growth.png", "Ablation: throughput and broker RSS as the log grows", growthFigure},
	{string(results.ScaleOut), "fig-scaleout.png", "Scale-out: aggregate producer throughput against broker hosts, and what limits it", scaleOutFigure},
}

// WriteFigures draws every figure that has data into dir.
func WriteFigures(dir string, set *results.Set) ([]Fig, error) {
	var out []Fig
	var errs []error
	for _, s := range figSpecs {
		err := s.build(set).Save(filepath.Join(dir, s.file))
		switch {
		case errors.Is(err, figures.ErrEmpty):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("report: figure %s: %w", s.file, err))
			continue
		}
		out = append(out, Fig{Key: s.key, File: s.file, Title: s.title})
	}
	return out, errors.Join(errs...)
}

var systems = []results.System{results.Kafka, results.ActiveMQ, results.RabbitMQ}

// systemNames are systems as the figures' categories.
var systemNames = []string{string(results.Kafka), string(results.ActiveMQ), string(results.RabbitMQ)}

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

func producerFigure(set *results.Set) figures.Figure {
	var lines []figures.Series
	add := func(name string, runs []results.Run) {
		if s, ok := timeSeries(name, runs); ok {
			lines = append(lines, s)
		}
	}
	add("Kafka, batch 1", sel(set, results.Kafka, results.VariantBatch(1), results.Produce))
	add("Kafka, batch 50", sel(set, results.Kafka, results.VariantBatch(50), results.Produce))
	add("ActiveMQ, 1 msg/send", sel(set, results.ActiveMQ, results.VariantOnePerSend, results.Produce))
	add("RabbitMQ, 1 msg/send", sel(set, results.RabbitMQ, results.VariantOnePerSend, results.Produce))
	single := figures.BarSeries{Name: "one message per send (Kafka: batch 1)"}
	batched := figures.BarSeries{Name: "Kafka batch 50 / peers: transactions"}
	for _, sys := range systems {
		if sys == results.Kafka {
			single.Bars = append(single.Bars, bar(string(sys), summary(sel(set, sys, results.VariantBatch(1), results.Produce), results.Throughput)))
			batched.Bars = append(batched.Bars, bar(string(sys), summary(sel(set, sys, results.VariantBatch(50), results.Produce), results.Throughput)))
			continue
		}
		single.Bars = append(single.Bars, bar(string(sys), summary(sel(set, sys, results.VariantOnePerSend, results.Produce), results.Throughput)))
		batched.Bars = append(batched.Bars, bar(string(sys), summary(peerTx(set, sys), results.Throughput)))
	}
	return figures.Figure{Panels: []figures.Panel{
		{Title: "Producer throughput over time", XLabel: "time (s)", YLabel: "messages/s", LogY: true, Lines: lines},
		{Title: "Producer throughput, median [min–max]", YLabel: "messages/s", LogY: true, Categories: systemNames,
			Bars: []figures.BarSeries{single, batched}},
	}}
}

func consumerFigure(set *results.Set) figures.Figure {
	var lines []figures.Series
	bars := figures.BarSeries{Name: "consumer"}
	for _, sys := range systems {
		runs := sel(set, sys, results.VariantConsumer, results.Consume)
		if s, ok := timeSeries(string(sys), runs); ok {
			lines = append(lines, s)
		}
		bars.Bars = append(bars.Bars, bar(string(sys), summary(runs, results.Throughput)))
	}
	return figures.Figure{Panels: []figures.Panel{
		{Title: "Consumer throughput over time", XLabel: "time (s)", YLabel: "messages/s", LogY: true, Lines: lines},
		{Title: "Consumer throughput, median [min–max]", YLabel: "messages/s", LogY: true, Categories: systemNames,
			Bars: []figures.BarSeries{bars}},
	}}
}

// storageRuns are the producer runs whose storage was measured: Kafka at batch
// 50, the peers one message per send.
func storageRuns(set *results.Set, sys results.System) []results.Run {
	v := results.VariantOnePerSend
	if sys == results.Kafka {
		v = results.VariantBatch(50)
	}
	var out []results.Run
	for _, r := range sel(set, sys, v, results.Produce) {
		if r.StorageBytesPerMsg > 0 {
			out = append(out, r)
		}
	}
	return out
}

func storageFigure(set *results.Set) figures.Figure {
	total := figures.BarSeries{Name: "allocated on disk"}
	for _, sys := range systems {
		total.Bars = append(total.Bars, bar(string(sys), summary(storageRuns(set, sys), results.Storage)))
	}
	return figures.Figure{Panels: []figures.Panel{{
		Title: "Bytes on disk per 200-byte message, median [min–max]", YLabel: "bytes/message",
		Categories: systemNames, Bars: []figures.BarSeries{total}, HLine: 200, HLineLabel: "payload (200 B)",
	}}}
}

// sweep turns runs of one phase into a line over their Param, with spreads.
func sweep(name string, runs []results.Run, x func(float64) float64, y func(results.Run) float64) figures.Series {
	s := figures.Series{Name: name}
	for _, p := range results.Params(runs) {
		var at []results.Run
		for _, r := range runs {
			if r.Param == p {
				at = append(at, r)
			}
		}
		sum := summary(at, y)
		s.X = append(s.X, x(p))
		s.Y = append(s.Y, sum.Median)
		s.YLow = append(s.YLow, sum.Min)
		s.YHigh = append(s.YHigh, sum.Max)
	}
	return s
}

func identity(x float64) float64 { return x }

// cpuPerGB is the broker's CPU seconds per GiB of payload moved.
func cpuPerGB(r results.Run) float64 {
	if r.Result.Bytes == 0 || r.BrokerCPUSeconds == 0 {
		return math.NaN()
	}
	return r.BrokerCPUSeconds / (float64(r.Result.Bytes) / (1 << 30))
}

func variantBars(set *results.Set, exp results.Experiment, phase results.Phase, f func(results.Run) float64) ([]string, figures.BarSeries) {
	runs := set.Select(results.Key{System: results.Kafka, Experiment: exp, Phase: phase})
	var cats []string
	var bs figures.BarSeries
	for _, v := range results.Variants(runs) {
		cats = append(cats, v.String())
		bs.Bars = append(bs.Bars, bar(v.String(), summary(set.Select(results.Key{System: results.Kafka, Experiment: exp, Variant: v, Phase: phase}), f)))
	}
	return cats, bs
}

func sendfileFigure(set *results.Set) figures.Figure {
	cats, tput := variantBars(set, results.Sendfile, results.Consume, results.Throughput)
	_, cpu := variantBars(set, results.Sendfile, results.Consume, cpuPerGB)
	if len(cats) == 0 {
		return figures.Figure{}
	}
	return figures.Figure{Panels: []figures.Panel{
		{Title: "Consumer throughput", YLabel: "messages/s", Categories: cats, Bars: []figures.BarSeries{tput}},
		{Title: "Broker CPU per GiB consumed", YLabel: "CPU seconds / GiB", Categories: cats, Bars: []figures.BarSeries{cpu}},
	}}
}

func flushFigure(set *results.Set) figures.Figure {
	runs := set.Select(results.Key{System: results.Kafka, Experiment: results.Flush, Phase: results.Produce})
	if len(runs) == 0 {
		return figures.Figure{}
	}
	return figures.Figure{Panels: []figures.Panel{{
		Title: "Producer (batch 50) against flush interval", XLabel: "log.flush.interval (messages)", YLabel: "messages/s",
		LogX: true, Lines: []figures.Series{sweep("Kafka producer", runs, identity, results.Throughput)},
	}}}
}

func batchFigure(set *results.Set) figures.Figure {
	runs := set.Select(results.Key{System: results.Kafka, Experiment: results.Batch, Phase: results.Produce})
	if len(runs) == 0 {
		return figures.Figure{}
	}
	return figures.Figure{Panels: []figures.Panel{{
		Title: "Producer throughput against batch size", XLabel: "messages per produce request", YLabel: "messages/s",
		LogX: true, LogY: true, Lines: []figures.Series{sweep("Kafka producer", runs, identity, results.Throughput)},
	}}}
}

func compressionFigure(set *results.Set) figures.Figure {
	cats, size := variantBars(set, results.Compression, results.Produce, results.Storage)
	if len(cats) == 0 {
		return figures.Figure{}
	}
	_, prod := variantBars(set, results.Compression, results.Produce, results.Throughput)
	_, cons := variantBars(set, results.Compression, results.Consume, results.Throughput)
	prod.Name, cons.Name = "producer", "consumer"
	return figures.Figure{Panels: []figures.Panel{
		{Title: "Bytes on disk per message", YLabel: "bytes/message", Categories: cats, Bars: []figures.BarSeries{size},
			HLine: 200, HLineLabel: "payload (200 B)"},
		{Title: "Throughput", YLabel: "messages/s", Categories: cats, Bars: []figures.BarSeries{prod, cons}},
	}}
}

func partitionsFigure(set *results.Set) figures.Figure {
	prod := set.Select(results.Key{System: results.Kafka, Experiment: results.Partitions, Phase: results.Produce})
	cons := set.Select(results.Key{System: results.Kafka, Experiment: results.Partitions, Phase: results.Consume})
	if len(prod)+len(cons) == 0 {
		return figures.Figure{}
	}
	return figures.Figure{Panels: []figures.Panel{{
		Title: "Throughput against partitions", XLabel: "partitions", YLabel: "messages/s",
		Lines: []figures.Series{
			sweep("one producer, batch 50", prod, identity, results.Throughput),
			sweep("one consumer per partition, combined", cons, identity, results.Throughput),
		},
	}}}
}

func rssMB(r results.Run) float64 {
	if r.BrokerRSSBytes == 0 {
		return math.NaN()
	}
	return float64(r.BrokerRSSBytes) / (1 << 20)
}

func growthFigure(set *results.Set) figures.Figure {
	prod := set.Select(results.Key{System: results.Kafka, Experiment: results.Growth, Phase: results.Produce})
	cons := set.Select(results.Key{System: results.Kafka, Experiment: results.Growth, Phase: results.Consume})
	if len(prod)+len(cons) == 0 {
		return figures.Figure{}
	}
	cats, p := variantBars(set, results.Growth, results.Produce, results.Throughput)
	_, c := variantBars(set, results.Growth, results.Consume, results.Throughput)
	_, rss := variantBars(set, results.Growth, results.Produce, rssMB)
	p.Name, c.Name, rss.Name = "producer", "consumer", "broker RSS"
	return figures.Figure{Panels: []figures.Panel{
		{Title: "Throughput at each log size", YLabel: "messages/s", Categories: cats, Bars: []figures.BarSeries{p, c}},
		{Title: "Broker resident memory", YLabel: "RSS (MiB)", Categories: cats, Bars: []figures.BarSeries{rss}},
	}}
}
