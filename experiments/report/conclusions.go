package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// change describes b relative to a, and whether the runs can tell them apart.
func change(from, to stats.Summary) string {
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
	return fmt.Sprintf("%s (%s → %s msg/s; %s)", pct(to.Median, from.Median), stats.Format(from.Median), stats.Format(to.Median), sep)
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
				parts = append(parts, fmt.Sprintf("%s %s", names[p], change(cmp.prod[p], cmp.tx[p])))
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
		mbps := summary(runs, func(r results.Run) float64 { return r.Result.MBPerSec * (1 << 20) / 1e6 }).Median
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
			u := summary(g.runs, func(r results.Run) float64 {
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
			w("- **CPU.** Broker and client shared this machine's %d cores. During the producer runs the broker process used about %s CPU-seconds per second; the client had the rest. The paper gave broker and client an 8-core machine each.\n", c.Machine.Cores, join(parts))
		}
	}
	if capped := cappedRuns(set); capped != "" {
		w("- **Run length.** %s\n", capped)
	}
	w("\n")
}

// num renders a parameter: whole numbers without decimals.
func num(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1000 {
		return strconv.FormatInt(int64(x), 10)
	}
	return stats.Format(x) // whole numbers >= 1000 come out grouped, without decimals
}

// medianStorageRun is the storage run with the median bytes per message.
func medianStorageRun(set *results.Set, sys results.System) (results.Run, bool) {
	runs := storageRuns(set, sys)
	if len(runs) == 0 {
		return results.Run{}, false
	}
	med := summary(runs, results.Storage).Median
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
