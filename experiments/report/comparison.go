package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/netdb11/kafka/experiments/figures"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// Comparison is the section of the paper's §5: Kafka's producer, consumer and
// storage tests beside ActiveMQ's and RabbitMQ's, the paper's numbers and
// claims against the measured ones, this reproduction's targets, conclusions
// computed from the runs, and the paper's producer, consumer and storage
// figures.
var Comparison = Section{
	Figures: []Figure{
		{"fig-producer.png", "Producer throughput: over time (median run) and per configuration (the paper's producer figure, §5)", producerFigure},
		{"fig-consumer.png", "Consumer throughput: over time (median run) and per system (the paper's consumer figure, §5)", consumerFigure},
		{"fig-storage.png", "Disk space per 200-byte message", storageFigure},
	},
	Write: writeComparison,
}

// writeComparison writes the comparison's tables, claims, targets,
// conclusions and figures.
func writeComparison(w Printf, set *results.Set, c Context, figs []Fig) {
	cmp := compare(set)
	w("## Paper figure vs measured\n\n")
	w("| Test | System | Paper | Measured | Runs |\n|---|---|---|---|---|\n")
	row := func(test, sys, paper string, s stats.Summary) {
		w("| %s | %s | %s | %s | %d |\n", test, sys, paper, Cell(s), s.N)
	}
	row("Producer, batch 1 (msg/s)", "Kafka", stats.Format(PaperKafkaBatch1), cmp.kafka1)
	row("Producer, batch 50 (msg/s)", "Kafka", stats.Format(PaperKafkaBatch50), cmp.kafka50)
	for _, p := range []results.System{results.ActiveMQ, results.RabbitMQ} {
		row("Producer, one message per send (msg/s)", names[p], "figure only", cmp.prod[p])
		row("Producer, "+txName(set, p)+" (msg/s)", names[p], "not in the paper", cmp.tx[p])
	}
	row("Consumer (msg/s)", "Kafka", stats.Format(PaperKafkaConsumer), cmp.kafkaCons)
	for _, p := range []results.System{results.ActiveMQ, results.RabbitMQ} {
		row("Consumer (msg/s)", names[p], "figure only", cmp.cons[p])
	}
	row("Disk per 200-byte message (bytes)", "Kafka", fmt.Sprintf("%d (overhead %d)", 200+PaperKafkaOverhead, PaperKafkaOverhead), cmp.kafkaStorage)
	row("Disk per 200-byte message (bytes)", "ActiveMQ", fmt.Sprintf("%d (overhead %d)", 200+PaperActiveMQOverhead, PaperActiveMQOverhead), cmp.storage[results.ActiveMQ])
	row("Disk per 200-byte message (bytes)", "RabbitMQ", "not in the paper", cmp.storage[results.RabbitMQ])
	w("\n")
	writeWhatTheyAre(w, set, c)
	writeDeliveryState(w, set)

	writeClaims(w, set, cmp)
	writeTargets(w, cmp)
	writeLimits(w, set, c)
	writeConclusions(w, set, c, cmp)

	w("## Figures\n\n")
	for _, f := range figs {
		w("**%s**\n\n![%s](%s)\n\n", f.Title, f.Title, f.File)
	}
}

// comparison holds the summaries the main tables and conclusions use.
type comparison struct {
	kafka1, kafka50, kafkaCons stats.Summary
	prod, tx, cons, storage    map[results.System]stats.Summary // peers by system
	kafkaStorage, kafkaApp     stats.Summary
}

func compare(set *results.Set) comparison {
	c := comparison{
		kafka1:       Summary(sel(set, results.Kafka, results.VariantBatch(1), results.Produce), results.Throughput),
		kafka50:      Summary(sel(set, results.Kafka, results.VariantBatch(50), results.Produce), results.Throughput),
		kafkaCons:    Summary(sel(set, results.Kafka, results.VariantConsumer, results.Consume), results.Throughput),
		kafkaStorage: Summary(storageRuns(set, results.Kafka), results.Storage),
		kafkaApp:     Summary(storageRuns(set, results.Kafka), func(r results.Run) float64 { return r.StorageApparentBytesPerMsg }),
		prod:         map[results.System]stats.Summary{},
		tx:           map[results.System]stats.Summary{},
		cons:         map[results.System]stats.Summary{},
		storage:      map[results.System]stats.Summary{},
	}
	for _, p := range []results.System{results.ActiveMQ, results.RabbitMQ} {
		c.prod[p] = Summary(sel(set, p, results.VariantOnePerSend, results.Produce), results.Throughput)
		c.tx[p] = Summary(peerTx(set, p), results.Throughput)
		c.cons[p] = Summary(sel(set, p, results.VariantConsumer, results.Consume), results.Throughput)
		c.storage[p] = Summary(storageRuns(set, p), results.Storage)
	}
	return c
}

var names = map[results.System]string{results.Kafka: "Kafka", results.ActiveMQ: "ActiveMQ", results.RabbitMQ: "RabbitMQ"}

var systems = []results.System{results.Kafka, results.ActiveMQ, results.RabbitMQ}

// systemNames are systems as the figures' categories.
var systemNames = []string{string(results.Kafka), string(results.ActiveMQ), string(results.RabbitMQ)}

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

func txName(set *results.Set, sys results.System) string {
	if runs := peerTx(set, sys); len(runs) > 0 {
		return runs[0].Variant.String()
	}
	return "transactions"
}

// writeClaims: the paper's ratio claims against the measured ratios.
func writeClaims(w func(string, ...any), set *results.Set, c comparison) {
	w("## The paper's claims, measured\n\n")
	w("Ratios are median/median, with the range from the worst to the best pairing of runs.\n\n")
	w("| Claim (paper §5) | Ratio | Measured | Verdict |\n|---|---|---|---|\n")
	claim := func(text, ratio string, r stats.Ratio, atLeast float64) {
		w("| %s | %s | %s | %s |\n", text, ratio, ratioCell(r), verdict(r, atLeast))
	}
	claim("Producer: Kafka at least 2× RabbitMQ", "Kafka batch 1 / RabbitMQ", stats.Divide(c.kafka1, c.prod[results.RabbitMQ]), PaperProducerOverRabbitMQ)
	claim("Producer: Kafka at least 2× RabbitMQ", "Kafka batch 50 / RabbitMQ", stats.Divide(c.kafka50, c.prod[results.RabbitMQ]), PaperProducerOverRabbitMQ)
	claim("Producer: Kafka orders of magnitude (≥100×) over ActiveMQ", "Kafka batch 1 / ActiveMQ", stats.Divide(c.kafka1, c.prod[results.ActiveMQ]), PaperProducerOverActiveMQ)
	claim("Producer: Kafka orders of magnitude (≥100×) over ActiveMQ", "Kafka batch 50 / ActiveMQ", stats.Divide(c.kafka50, c.prod[results.ActiveMQ]), PaperProducerOverActiveMQ)
	claim("Consumer: Kafka more than 4× ActiveMQ", "Kafka / ActiveMQ", stats.Divide(c.kafkaCons, c.cons[results.ActiveMQ]), PaperConsumerOverPeers)
	claim("Consumer: Kafka more than 4× RabbitMQ", "Kafka / RabbitMQ", stats.Divide(c.kafkaCons, c.cons[results.RabbitMQ]), PaperConsumerOverPeers)
	over := func(s stats.Summary) stats.Summary {
		return stats.Summary{N: s.N, Median: s.Median - 200, Min: s.Min - 200, Max: s.Max - 200, Mean: s.Mean - 200}
	}
	ko, ao := over(c.kafkaStorage), over(c.storage[results.ActiveMQ])
	w("| Storage overhead: Kafka %d B vs ActiveMQ %d B per message (%.0f× less) | ActiveMQ overhead / Kafka overhead | %s (Kafka %s B, ActiveMQ %s B) | %s |\n",
		PaperKafkaOverhead, PaperActiveMQOverhead, float64(PaperActiveMQOverhead)/PaperKafkaOverhead,
		ratioCell(stats.Divide(ao, ko)), statsOrNA(ko), statsOrNA(ao),
		verdict(stats.Divide(ao, ko), float64(PaperActiveMQOverhead)/PaperKafkaOverhead))
	w("\nThe peers in these ratios send one message per send, as in the paper. Against their transaction variants: ")
	var parts []string
	for _, p := range []results.System{results.ActiveMQ, results.RabbitMQ} {
		if c.tx[p].N > 0 {
			parts = append(parts, fmt.Sprintf("Kafka batch 50 / %s %s = %s", names[p], txName(set, p), ratioCell(stats.Divide(c.kafka50, c.tx[p]))))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "not measured")
	}
	w("%s.\n\n", join(parts))
}

func statsOrNA(s stats.Summary) string {
	if s.N == 0 {
		return "n/a"
	}
	return stats.Format(s.Median)
}

// writeTargets: issue 5's targets for this reproduction.
func writeTargets(w func(string, ...any), c comparison) {
	w("## Targets of this reproduction\n\n")
	bestProd, bestProdName := 0.0, ""
	bestCons, bestConsName := 0.0, ""
	for _, p := range []results.System{results.ActiveMQ, results.RabbitMQ} {
		for name, s := range map[string]stats.Summary{"one message per send": c.prod[p], "transactions": c.tx[p]} {
			if s.N > 0 && s.Median > bestProd {
				bestProd, bestProdName = s.Median, names[p]+", "+name
			}
		}
		if s := c.cons[p]; s.N > 0 && s.Median > bestCons {
			bestCons, bestConsName = s.Median, names[p]
		}
	}
	target := func(what string, ours stats.Summary, best float64, bestName string) {
		if ours.N == 0 || best == 0 {
			w("- %s ≥ %d× the best peer: not measured.\n", what, TargetOverBestPeer)
			return
		}
		r := ours.Median / best
		ok := "met"
		if r < TargetOverBestPeer {
			ok = "**not met**"
		}
		w("- %s ≥ %d× the best peer (%s, %s msg/s): %s msg/s = %s× — %s.\n", what, TargetOverBestPeer, bestName, stats.Format(best), stats.Format(ours.Median), stats.Format(r), ok)
	}
	target("Producer at batch 50", c.kafka50, bestProd, bestProdName)
	target("Consumer", c.kafkaCons, bestCons, bestConsName)
	if c.kafkaApp.N > 0 {
		ok := "met"
		if math.Abs(c.kafkaApp.Median-TargetBytesPerMessage) > 0.5 {
			ok = "**not met**"
		}
		w("- %d bytes per 200-byte message on disk (file sizes): %s B (allocated blocks: %s B) — %s.\n\n",
			TargetBytesPerMessage, stats.Format(c.kafkaApp.Median), stats.Format(c.kafkaStorage.Median), ok)
	} else {
		w("- %d bytes per 200-byte message on disk: not measured.\n\n", TargetBytesPerMessage)
	}
}

// writeConclusions writes sentences computed from the comparison.
func writeConclusions(w func(string, ...any), set *results.Set, c Context, cmp comparison) {
	w("## Conclusions\n\n")
	amq, rmq := results.ActiveMQ, results.RabbitMQ
	if cmp.kafka50.N > 0 || cmp.kafka1.N > 0 {
		w("- **Producer.** Kafka sent %s msg/s at batch 50 and %s msg/s at batch 1 (paper: %s and %s; %s× and %s× the paper's numbers here). ",
			stats.Format(cmp.kafka50.Median), stats.Format(cmp.kafka1.Median), stats.Format(PaperKafkaBatch50), stats.Format(PaperKafkaBatch1),
			stats.Format(cmp.kafka50.Median/PaperKafkaBatch50), stats.Format(cmp.kafka1.Median/PaperKafkaBatch1))
		if cmp.prod[amq].N > 0 || cmp.prod[rmq].N > 0 {
			r1a, r1r := stats.Divide(cmp.kafka1, cmp.prod[amq]), stats.Divide(cmp.kafka1, cmp.prod[rmq])
			w("Sending one message per send, ActiveMQ reached %s msg/s and RabbitMQ %s msg/s. Even at batch 1 Kafka is %s× RabbitMQ, so the claim of at least 2× %s, and %s× ActiveMQ (%.1f orders of magnitude), so the claim of orders of magnitude %s.",
				statsOrNA(cmp.prod[amq]), statsOrNA(cmp.prod[rmq]), stats.Format(r1r.Median), holds(r1r, PaperProducerOverRabbitMQ),
				stats.Format(r1a.Median), math.Log10(r1a.Median), holds(r1a, PaperProducerOverActiveMQ))
		}
		w("\n")
	}
	if cmp.kafka1.N > 0 && cmp.kafka50.N > 0 {
		w("- **Batching.** Going from batch 1 to batch 50 multiplied Kafka's producer rate by %s (paper: %s). ",
			stats.Format(cmp.kafka50.Median/cmp.kafka1.Median), stats.Format(float64(PaperKafkaBatch50)/PaperKafkaBatch1))
		var parts []string
		for _, p := range []results.System{amq, rmq} {
			if cmp.tx[p].N > 0 && cmp.prod[p].N > 0 {
				parts = append(parts, fmt.Sprintf("%s %s", names[p], Change(cmp.prod[p], cmp.tx[p])))
			}
		}
		if len(parts) > 0 {
			w("The peers' nearest notion of a batch, %s, changed their rates as follows: %s; a transaction groups the commit, while every message is still its own send.", txName(set, amq), join(parts))
		}
		w("\n")
	}
	if cmp.kafkaCons.N > 0 {
		ra, rr := stats.Divide(cmp.kafkaCons, cmp.cons[amq]), stats.Divide(cmp.kafkaCons, cmp.cons[rmq])
		w("- **Consumer.** Kafka consumed %s msg/s (paper: %s), %s× ActiveMQ (%s msg/s) and %s× RabbitMQ (%s msg/s): the claim of more than 4× %s for ActiveMQ and %s for RabbitMQ.\n",
			stats.Format(cmp.kafkaCons.Median), stats.Format(PaperKafkaConsumer), stats.Format(ra.Median), statsOrNA(cmp.cons[amq]),
			stats.Format(rr.Median), statsOrNA(cmp.cons[rmq]), holds(ra, PaperConsumerOverPeers), holds(rr, PaperConsumerOverPeers))
	}
	if cmp.kafkaStorage.N > 0 || cmp.storage[amq].N > 0 {
		w("- **Storage.** Per 200-byte message Kafka used %s bytes on disk (overhead %s B; paper %d B), ActiveMQ %s bytes (overhead %s B; paper %d B) and RabbitMQ %s bytes.",
			statsOrNA(cmp.kafkaStorage), overhead(cmp.kafkaStorage), PaperKafkaOverhead,
			statsOrNA(cmp.storage[amq]), overhead(cmp.storage[amq]), PaperActiveMQOverhead, statsOrNA(cmp.storage[rmq]))
		var parts []string
		for _, sys := range systems {
			if r, ok := medianStorageRun(set, sys); ok && r.Config["storage_by_file"] != "" {
				parts = append(parts, fmt.Sprintf("%s: %s", names[sys], r.Config["storage_by_file"]))
			}
		}
		if len(parts) > 0 {
			w(" Where the bytes went, by kind of file (median run): %s.", strings.Join(parts, "; "))
		}
		w("\n")
	}
	if cmp.kafka50.N > 0 {
		runs := sel(set, results.Kafka, results.VariantBatch(50), results.Produce)
		mbps := Summary(runs, func(r results.Run) float64 { return r.Result.MBPerSec * (1 << 20) / 1e6 }).Median
		link := 125.0 // MB/s, a 1 Gbit link
		perMsg := float64(TargetBytesPerMessage)
		if cmp.kafkaApp.N > 0 {
			perMsg = cmp.kafkaApp.Median
		}
		capMsgs := link * 1e6 / perMsg
		if c.TestbedKind != "paper" {
			w("- **Network.** These runs used loopback. Kafka's batch-50 producer moved %s MB/s of payload, %s× what the paper's 1 Gb link carries (125 MB/s); over such a link it would be capped near %s msg/s. Use `--testbed=paper` for that setting.\n",
				stats.Format(mbps), stats.Format(mbps/link), stats.Format(capMsgs))
		} else {
			w("- **Network.** Kafka's batch-50 producer moved %s MB/s of payload over the emulated 1 Gb link (%s%% of 125 MB/s).\n", stats.Format(mbps), stats.Format(mbps/link*100))
		}
	}
	if c.Machine.Cores > 0 {
		var parts []string
		for _, g := range []struct {
			name string
			runs []results.Run
		}{
			{"Kafka at batch 50", sel(set, results.Kafka, results.VariantBatch(50), results.Produce)},
			{"ActiveMQ", sel(set, amq, results.VariantOnePerSend, results.Produce)},
			{"RabbitMQ", sel(set, rmq, results.VariantOnePerSend, results.Produce)},
		} {
			u := Summary(g.runs, func(r results.Run) float64 {
				if r.BrokerCPUSeconds == 0 || r.Result.Seconds == 0 {
					return math.NaN()
				}
				return r.BrokerCPUSeconds / r.Result.Seconds
			})
			if u.N > 0 {
				parts = append(parts, fmt.Sprintf("%s %s", g.name, stats.Format(u.Median)))
			}
		}
		if len(parts) > 0 {
			who := "the broker process"
			if set.Config.Runtime == "container" {
				who = fmt.Sprintf("the broker's container (limited to %s CPUs; every process in it counted)", set.Config.ContainerCPUs)
			}
			w("- **CPU.** Broker and client shared this machine's %d cores. During the producer runs %s used about %s CPU-seconds per second; the client had the rest. The paper gave broker and client an 8-core machine each.\n", c.Machine.Cores, who, join(parts))
		}
	}
	if capped := cappedRuns(set); capped != "" {
		w("- **Run length.** %s\n", capped)
	}
	w("\n")
}

func holds(r stats.Ratio, atLeast float64) string {
	switch {
	case math.IsNaN(r.Median):
		return "cannot be checked (not measured)"
	case r.Median >= atLeast:
		return "holds"
	default:
		return "does not hold"
	}
}

// medianStorageRun is the storage run with the median bytes per message.
func medianStorageRun(set *results.Set, sys results.System) (results.Run, bool) {
	runs := storageRuns(set, sys)
	if len(runs) == 0 {
		return results.Run{}, false
	}
	med := Summary(runs, results.Storage).Median
	best := runs[0]
	for _, r := range runs {
		if math.Abs(r.StorageBytesPerMsg-med) < math.Abs(best.StorageBytesPerMsg-med) {
			best = r
		}
	}
	return best, true
}

func overhead(s stats.Summary) string {
	if s.N == 0 {
		return "n/a"
	}
	return stats.Format(s.Median - 200)
}

// cappedRuns says which peer runs stopped at the time cap rather than at their
// message count.
func cappedRuns(set *results.Set) string {
	n, total := 0, 0
	capText := ""
	for _, r := range set.Runs {
		if !r.OK() || r.System == results.Kafka || r.Phase != results.Produce {
			continue
		}
		total++
		want, err := strconv.ParseInt(r.Config["messages"], 10, 64)
		if err == nil && r.Result.Messages < want {
			n++
			capText = r.Config["time_cap"]
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d peer producer runs reached the time cap of %s before their message count; their rates are over the capped duration (the paper sent 10 million messages; `--full` does).", n, total, capText)
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
			single.Bars = append(single.Bars, bar(string(sys), Summary(sel(set, sys, results.VariantBatch(1), results.Produce), results.Throughput)))
			batched.Bars = append(batched.Bars, bar(string(sys), Summary(sel(set, sys, results.VariantBatch(50), results.Produce), results.Throughput)))
			continue
		}
		single.Bars = append(single.Bars, bar(string(sys), Summary(sel(set, sys, results.VariantOnePerSend, results.Produce), results.Throughput)))
		batched.Bars = append(batched.Bars, bar(string(sys), Summary(peerTx(set, sys), results.Throughput)))
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
		bars.Bars = append(bars.Bars, bar(string(sys), Summary(runs, results.Throughput)))
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
		total.Bars = append(total.Bars, bar(string(sys), Summary(storageRuns(set, sys), results.Storage)))
	}
	return figures.Figure{Panels: []figures.Panel{{
		Title: "Bytes on disk per 200-byte message, median [min–max]", YLabel: "bytes/message",
		Categories: systemNames, Bars: []figures.BarSeries{total}, HLine: 200, HLineLabel: "payload (200 B)",
	}}}
}
