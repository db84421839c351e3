package report

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// comparison holds the summaries the main tables and conclusions use.
type comparison struct {
	kafka1, kafka50, kafkaCons stats.Summary
	prod, tx, cons, storage    map[results.System]stats.Summary // peers by system
	kafkaStorage, kafkaApp     stats.Summary
}

func compare(set *results.Set) comparison {
	c := comparison{
		kafka1:       summary(sel(set, results.Kafka, results.VariantBatch(1), results.Produce), results.Throughput),
		kafka50:      summary(sel(set, results.Kafka, results.VariantBatch(50), results.Produce), results.Throughput),
		kafkaCons:    summary(sel(set, results.Kafka, results.VariantConsumer, results.Consume), results.Throughput),
		kafkaStorage: summary(storageRuns(set, results.Kafka), results.Storage),
		kafkaApp:     summary(storageRuns(set, results.Kafka), func(r results.Run) float64 { return r.StorageApparentBytesPerMsg }),
		prod:         map[results.System]stats.Summary{},
		tx:           map[results.System]stats.Summary{},
		cons:         map[results.System]stats.Summary{},
		storage:      map[results.System]stats.Summary{},
	}
	for _, p := range []results.System{results.ActiveMQ, results.RabbitMQ} {
		c.prod[p] = summary(sel(set, p, results.VariantOnePerSend, results.Produce), results.Throughput)
		c.tx[p] = summary(peerTx(set, p), results.Throughput)
		c.cons[p] = summary(sel(set, p, results.VariantConsumer, results.Consume), results.Throughput)
		c.storage[p] = summary(storageRuns(set, p), results.Storage)
	}
	return c
}

var names = map[results.System]string{results.Kafka: "Kafka", results.ActiveMQ: "ActiveMQ", results.RabbitMQ: "RabbitMQ"}

// Markdown renders report.md.
func Markdown(set *results.Set, c Context, figs []Fig) string {
	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	cmp := compare(set)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	w("# Kafka (NetDB'11) §5 reproduced: Kafka vs ActiveMQ vs RabbitMQ\n\n")
	runtime := ""
	if set.Config.Runtime == "container" {
		runtime = fmt.Sprintf(" --runtime=container --container-cpus=%s --container-memory=%s", set.Config.ContainerCPUs, set.Config.ContainerMemory)
	}
	w("Generated %s by `kafka-experiments --%s --testbed=%s%s`. Every number below is the median of repeated runs with the range [min–max]; all runs are in `runs.csv` and `runs.json`, each driver's output in `logs/`.\n\n",
		now.UTC().Format(time.RFC3339), c.Mode, c.TestbedKind, runtime)
	w("- **This machine:** %s.\n", c.Machine.Summary())
	if c.Machine.ActiveMQVersion != "" || c.Machine.RabbitMQVersion != "" {
		w("- **Peers:** ActiveMQ %s, RabbitMQ %s (Erlang %s), %s.\n", orNA(c.Machine.ActiveMQVersion), orNA(c.Machine.RabbitMQVersion), orNA(c.Machine.ErlangVersion), orNA(c.Machine.JavaVersion))
	}
	w("- **Testbed:** %s.\n", c.Testbed)
	w("- **The paper's testbed:** %s.\n", PaperTestbed)
	for _, st := range c.Settings {
		w("- **Departure from Kafka 0.7's defaults:** %s.\n", st)
	}
	w("\n")

	w("## Paper figure vs measured\n\n")
	w("| Test | System | Paper | Measured | Runs |\n|---|---|---|---|---|\n")
	row := func(test, sys, paper string, s stats.Summary) {
		w("| %s | %s | %s | %s | %d |\n", test, sys, paper, cell(s), s.N)
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

	writeClaims(w, set, cmp)
	writeTargets(w, cmp)
	writeConclusions(w, set, c, cmp)

	w("## Figures\n\n")
	for _, f := range figs {
		if !strings.HasPrefix(f.File, "fig-ablation-") && f.Key != string(results.ScaleOut) {
			w("**%s**\n\n![%s](%s)\n\n", f.Title, f.Title, f.File)
		}
	}
	writeScaleOut(w, set, figs)
	writeAblations(w, set, figs)
	writeLink(w, set)
	writeMethod(w, set, c)
	if len(c.Failures) > 0 {
		w("## Failures\n\nThese runs or systems failed; their numbers are missing above.\n\n")
		for _, f := range c.Failures {
			w("- %s\n", strings.ReplaceAll(firstLine(f), "|", "\\|"))
		}
		w("\n")
	}
	return b.String()
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
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

// linkSampleEvery is how often the harness reads the link (experiments'
// linkSampleInterval), for the report's text.
const linkSampleEvery = "200ms"

// writeLink lists the link utilisation of every configuration measured on the
// emulated testbed (bytes on the wire / link capacity in the steady state and
// over the timed run), so the paper's "almost saturated the 1Gb link" can be
// checked.
func writeLink(w func(string, ...any), set *results.Set) {
	type key = results.Key
	var order []key
	groups := map[key][]results.Run{}
	for _, r := range set.Runs {
		if !r.OK() || (r.LinkUtilisation == 0 && r.LinkUtilisationTimed == 0) {
			continue
		}
		k := r.Key
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	if len(order) == 0 {
		return
	}
	w("## Link utilisation\n\nBytes on the client host's link in the messages' direction (client to broker for a producer, broker to client for a consumer), counted by the link's tbf qdisc as whole frames with their Ethernet, IP and TCP headers, over the link's capacity. *Steady state* is the window from the moment 10%% of the run's bytes had crossed the link to the moment 90%% had (sampled every %v and interpolated), so process start-up, connection set-up and the drain at the end fall outside it (– where a transfer was too short for three readings inside that window); *timed run* is the same bytes over the driver's whole timed run. 100%% is the link's rate (a producer's timed run can exceed it slightly: its clock stops when the last request is in the kernel's socket buffer, not on the wire); TCP payload can fill at most 1448/1514 = 95.6%% of it.\n\n", linkSampleEvery)
	w("| System | Experiment | Configuration | Phase | Messages/s | Steady state (%%) | Timed run (%%) | Runs |\n|---|---|---|---|---|---|---|---|\n")
	for _, k := range order {
		rs := groups[k]
		w("| %s | %s | %s | %s | %s | %s | %s | %d |\n", names[k.System], k.Experiment, k.Variant, k.Phase,
			cell(summary(rs, results.Throughput)), cellNaN(summary(rs, func(r results.Run) float64 { return 100 * nanIfZero(r.LinkUtilisation) })),
			cell(summary(rs, func(r results.Run) float64 { return 100 * r.LinkUtilisationTimed })), len(rs))
	}
	w("\n")
}
