package report

import (
	"fmt"
	"strings"

	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// ablationText describes each ablation: what it isolates, and its conclusion
// computed from the runs.
var ablationText = []struct {
	key         results.Experiment
	title, what string
	conclude    func(*results.Set) string
}{
	{results.Sendfile, "sendfile vs read+write", "Paper §3.1: fetches are served with sendfile, skipping two copies and a system call. The same log is read with `fetch.use.sendfile` on and off; the broker's CPU time per GiB shows the copies.", concludeSendfile},
	{results.Flush, "flush interval", "Paper §3.1: the broker flushes the log every N messages (or on a timer), not per message. The producer at batch 50 against `log.flush.interval`.", concludeFlush},
	{results.Batch, "batch size", "Paper §3.1/§5: the producer sends a set of messages per request. Batch sizes from 1 to 1000.", concludeBatch},
	{results.Compression, "compression", "Kafka 0.7 compresses whole message sets (`compression.codec` 1 gzip, 2 snappy); the broker stores and serves them as they are. Payloads are log-like lines.", concludeCompression},
	{results.Partitions, "partitions", "Paper §3.2: partitions are the unit of parallelism. One producer spreads messages over P partitions; P consumers read them at once.", concludePartitions},
	{results.Growth, "log growth", "Paper §3.1/§5: performance does not degrade with data size, and the broker caches nothing itself. Throughput and RSS with the log at each size.", concludeGrowth},
}

func writeAblations(w func(string, ...any), set *results.Set, figs []Fig) {
	any := false
	for _, a := range ablationText {
		if len(set.Select(results.Key{System: results.Kafka, Experiment: a.key})) > 0 {
			any = true
		}
	}
	if !any {
		return
	}
	w("## Ablations\n\nEach changes one design decision of Kafka and nothing else; each configuration runs repeatedly, and the table gives median [min–max].\n\n")
	for _, a := range ablationText {
		runs := set.Select(results.Key{System: results.Kafka, Experiment: a.key})
		if len(runs) == 0 {
			continue
		}
		w("### %s\n\n%s\n\n", a.title, a.what)
		for _, f := range figs {
			if f.Key == string(a.key) {
				w("![%s](%s)\n\n", f.Title, f.File)
			}
		}
		w("| Configuration | Phase | Messages/s | MB/s | Bytes on disk/msg | Broker RSS (MiB) | Broker CPU (s) | Runs |\n|---|---|---|---|---|---|---|---|\n")
		for _, v := range results.Variants(runs) {
			for _, ph := range []results.Phase{results.Produce, results.Consume} {
				rs := set.Select(results.Key{System: results.Kafka, Experiment: a.key, Variant: v, Phase: ph})
				if len(rs) == 0 {
					continue
				}
				w("| %s | %s | %s | %s | %s | %s | %s | %d |\n", v, ph,
					cell(summary(rs, results.Throughput)),
					cell(summary(rs, func(r results.Run) float64 { return r.Result.MBPerSec })),
					cellNaN(summary(rs, results.Storage)),
					cellNaN(summary(rs, rssMB)),
					cellNaN(summary(rs, func(r results.Run) float64 { return r.BrokerCPUSeconds })),
					len(rs))
			}
		}
		w("\n**Conclusion.** %s\n\n", a.conclude(set))
	}
}

func cellNaN(s stats.Summary) string {
	if s.N == 0 {
		return "–"
	}
	return cell(s)
}

func variantSummary(set *results.Set, exp results.Experiment, variant results.Variant, phase results.Phase, f func(results.Run) float64) stats.Summary {
	return summary(set.Select(results.Key{System: results.Kafka, Experiment: exp, Variant: variant, Phase: phase}), f)
}

func concludeSendfile(set *results.Set) string {
	on := variantSummary(set, results.Sendfile, results.Setting("sendfile", "true"), results.Consume, results.Throughput)
	off := variantSummary(set, results.Sendfile, results.Setting("sendfile", "false"), results.Consume, results.Throughput)
	if on.N == 0 || off.N == 0 {
		return "Not enough runs to compare."
	}
	cpuOn := variantSummary(set, results.Sendfile, results.Setting("sendfile", "true"), results.Consume, cpuPerGB)
	cpuOff := variantSummary(set, results.Sendfile, results.Setting("sendfile", "false"), results.Consume, cpuPerGB)
	s := fmt.Sprintf("Replacing sendfile with read+write changed the consumer's rate by %s.", change(on, off))
	if cpuOn.N == 0 || cpuOff.N == 0 {
		return s
	}
	s += fmt.Sprintf(" The broker spent %s CPU seconds per GiB with sendfile and %s with read+write (%s",
		stats.Format(cpuOn.Median), stats.Format(cpuOff.Median), pct(cpuOff.Median, cpuOn.Median))
	cpuDiffers := !cpuOn.Overlaps(cpuOff) && cpuOn.N > 1 && cpuOff.N > 1
	if cpuDiffers {
		s += "; ranges do not overlap)."
	} else {
		s += "; ranges overlap or single runs)."
	}
	switch {
	case on.Overlaps(off) && cpuDiffers && cpuOff.Median > cpuOn.Median:
		s += " Throughput did not change measurably while the broker's CPU per GiB did: here sendfile's saving shows in the broker's CPU, not in the consumer's rate."
	case on.Overlaps(off) && !cpuDiffers:
		s += " Neither throughput nor the broker's CPU changed measurably in these runs."
	}
	return s
}

// sweepSummaries summarises a phase of a sweep at each parameter.
func sweepSummaries(set *results.Set, exp results.Experiment, phase results.Phase) ([]float64, []stats.Summary) {
	runs := set.Select(results.Key{System: results.Kafka, Experiment: exp, Phase: phase})
	params := results.Params(runs)
	out := make([]stats.Summary, len(params))
	for i, p := range params {
		var at []results.Run
		for _, r := range runs {
			if r.Param == p {
				at = append(at, r)
			}
		}
		out[i] = summary(at, results.Throughput)
	}
	return params, out
}

func concludeFlush(set *results.Set) string {
	params, sums := sweepSummaries(set, results.Flush, results.Produce)
	if len(params) < 2 {
		return "Not enough flush intervals to compare."
	}
	first, last := sums[0], sums[len(sums)-1]
	s := fmt.Sprintf("Flushing every %s instead of every %s messages changed the producer's rate by %s.",
		messages(params[0]), num(params[len(params)-1]), change(last, first))
	best := 0
	for i := range sums {
		if sums[i].Median > sums[best].Median {
			best = i
		}
	}
	// The smallest interval within 10% of the best.
	for i := range sums {
		if sums[i].Median >= 0.9*sums[best].Median {
			s += fmt.Sprintf(" From an interval of %s on, the rate is within 10%% of the best (%s msg/s).", messages(params[i]), stats.Format(sums[best].Median))
			break
		}
	}
	return s
}

func concludeBatch(set *results.Set) string {
	params, sums := sweepSummaries(set, results.Batch, results.Produce)
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
		stats.Format(sums[0].Median), num(params[0]), stats.Format(sums[best].Median), num(params[best]),
		stats.Format(sums[best].Median/sums[0].Median))
	for i := range sums {
		if sums[i].Median >= 0.9*sums[best].Median {
			if i < best {
				s += fmt.Sprintf(" Batches of %s already reach 90%% of that.", num(params[i]))
			}
			break
		}
	}
	return s
}

func concludeCompression(set *results.Set) string {
	none := variantSummary(set, results.Compression, results.Setting("codec", "none"), results.Produce, results.Storage)
	if none.N == 0 {
		return "Not measured without compression; nothing to compare with."
	}
	s := fmt.Sprintf("Uncompressed, a message took %s bytes on disk.", stats.Format(none.Median))
	runs := set.Select(results.Key{System: results.Kafka, Experiment: results.Compression, Phase: results.Produce})
	if len(runs) > 0 && !strings.HasPrefix(runs[0].Config["payload"], "log-like") {
		s += " These payloads were not log-like (" + runs[0].Config["payload"] + "), so the ratios say little about logs."
	}
	for _, codec := range []string{"gzip", "snappy"} {
		v := results.Setting("codec", codec)
		size := variantSummary(set, results.Compression, v, results.Produce, results.Storage)
		if size.N == 0 {
			continue
		}
		p := change(variantSummary(set, results.Compression, results.Setting("codec", "none"), results.Produce, results.Throughput),
			variantSummary(set, results.Compression, v, results.Produce, results.Throughput))
		c := change(variantSummary(set, results.Compression, results.Setting("codec", "none"), results.Consume, results.Throughput),
			variantSummary(set, results.Compression, v, results.Consume, results.Throughput))
		s += fmt.Sprintf(" With %s: %s bytes (%s× smaller); producer rate %s; consumer rate %s.",
			codec, stats.Format(size.Median), stats.Format(none.Median/size.Median), p, c)
	}
	return s
}

func concludePartitions(set *results.Set) string {
	params, prod := sweepSummaries(set, results.Partitions, results.Produce)
	_, cons := sweepSummaries(set, results.Partitions, results.Consume)
	if len(params) < 2 {
		return "Not enough partition counts to compare."
	}
	last := len(params) - 1
	s := fmt.Sprintf("From %s to %s partitions, one producer's rate changed by %s", num(params[0]), num(params[last]), change(prod[0], prod[last]))
	if len(cons) == len(params) {
		s += fmt.Sprintf(", and the combined rate of one consumer per partition by %s", change(cons[0], cons[last]))
	}
	s += "."
	if len(cons) == len(params) && cons[0].Median > 0 {
		s += fmt.Sprintf(" For %s× the partitions (and consumers), the combined consumer rate scaled %s×; linear scaling would be %s×.",
			num(params[last]/params[0]), stats.Format(cons[last].Median/cons[0].Median), num(params[last]/params[0]))
	}
	return s
}

func concludeGrowth(set *results.Set) string {
	prodRuns := set.Select(results.Key{System: results.Kafka, Experiment: results.Growth, Phase: results.Produce})
	params := results.Params(prodRuns)
	if len(params) < 2 {
		return "Not enough log sizes to compare."
	}
	at := func(phase results.Phase, p float64, f func(results.Run) float64) stats.Summary {
		var rs []results.Run
		for _, r := range set.Select(results.Key{System: results.Kafka, Experiment: results.Growth, Phase: phase}) {
			if r.Param == p {
				rs = append(rs, r)
			}
		}
		return summary(rs, f)
	}
	lo, hi := params[0], params[len(params)-1]
	s := fmt.Sprintf("With the log at %s instead of %s, the producer's rate changed by %s and the consumer's by %s.",
		humanSize(hi), humanSize(lo), change(at(results.Produce, lo, results.Throughput), at(results.Produce, hi, results.Throughput)),
		change(at(results.Consume, lo, results.Throughput), at(results.Consume, hi, results.Throughput)))
	rlo, rhi := at(results.Produce, lo, rssMB), at(results.Produce, hi, rssMB)
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

func humanSize(b float64) string {
	switch {
	case b >= 1<<30:
		return num(b/(1<<30)) + " GiB"
	case b >= 1<<20:
		return num(b/(1<<20)) + " MiB"
	}
	return num(b) + " B"
}

// messages renders a message count with its noun: "1 message", "100 messages".
func messages(n float64) string {
	if n == 1 {
		return "1 message"
	}
	return num(n) + " messages"
}
