package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/experiments/machine"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// Limits are the machine's limits measured in the same run (issue 14), in
// MB/s (10^6 bytes); 0 where not measured.
type Limits struct {
	// DiskWrite is sequential writes through the page cache with fdatasync
	// (the way Kafka's log writes); DiskDirect the same with O_DIRECT.
	DiskWrite, DiskDirect float64
	// DiskRead is a cold sequential read.
	DiskRead float64
	// Loopback is one plain TCP stream; LoopbackProducer and LoopbackFetch
	// one stream shaped as the producer's and as a fetch's.
	Loopback, LoopbackProducer, LoopbackFetch float64
	// DirtyBytes is about how much unwritten data the page cache takes
	// before writers are throttled to the disk's pace.
	DirtyBytes int64
}

// Best is, limit by limit, the better of l and o: a limit is the most the
// machine did, and on a shared machine it moves between measurements.
func (l Limits) Best(o Limits) Limits {
	return Limits{DiskWrite: max(l.DiskWrite, o.DiskWrite), DiskDirect: max(l.DiskDirect, o.DiskDirect), DiskRead: max(l.DiskRead, o.DiskRead),
		Loopback: max(l.Loopback, o.Loopback), LoopbackProducer: max(l.LoopbackProducer, o.LoopbackProducer),
		LoopbackFetch: max(l.LoopbackFetch, o.LoopbackFetch), DirtyBytes: max(l.DirtyBytes, o.DirtyBytes)}
}

// limitsOf returns the limits the report uses (the better of the two
// measurements, before and after the runs), and each measurement.
func limitsOf(c Context) (used, before, after Limits) {
	before = LimitsOf(c.Machine)
	if c.LimitsAfter == nil {
		return before, before, Limits{}
	}
	after = LimitsOf(*c.LimitsAfter)
	return before.Best(after), before, after
}

// LimitsOf reads the limits from the machine's description.
func LimitsOf(m machine.Machine) Limits {
	l := Limits{DiskWrite: m.DiskWriteMBps, Loopback: m.LoopbackMBps, LoopbackProducer: m.LoopbackProducerMBps,
		LoopbackFetch: m.LoopbackFetchMBps, DirtyBytes: m.DirtyLimitBytes}
	if m.Disk != nil {
		l.DiskDirect, l.DiskRead = m.Disk.DirectWriteMBps, m.Disk.ReadMBps
	}
	return l
}

// producerNet is the loopback limit of a producer: one stream shaped as
// its connection, else a plain one.
func (l Limits) producerNet() float64 {
	if l.LoopbackProducer > 0 {
		return l.LoopbackProducer
	}
	return l.Loopback
}

// fetchNet is the loopback limit of a consumer reading from the page cache.
func (l Limits) fetchNet() float64 {
	if l.LoopbackFetch > 0 {
		return l.LoopbackFetch
	}
	return l.Loopback
}

// Kinds of a producer run's phase.
const (
	// KindBurst: the whole run went faster than the disk writes: the page
	// cache absorbed it, and it ended before the knee.
	KindBurst = "burst"
	// KindSustained: the whole run went at or below the disk's write rate,
	// a rate the disk keeps up with indefinitely.
	KindSustained = "sustained"
	// KindBoth: the run crossed a knee: a burst faster than the disk, then
	// the sustained rate.
	KindBoth = "burst, then sustained"
	// KindSlowed: the run's rate fell at a knee, but it was below the disk's
	// write limit before it: something other than the page cache slowed it.
	KindSlowed = "slowed, below the disk's rate"
	// KindUnknown: the disk's rate was not measured and the run has no knee.
	KindUnknown = "one phase"
)

// RunPhase is a producer run divided into its burst and sustained phases.
type RunPhase struct {
	// Split is the knee fit of the run's progress (messages over time).
	Split stats.Split
	// Kind is KindBurst, KindSustained, KindBoth or KindUnknown.
	Kind string
}

// ProducerPhase finds the phases of a producer run from its samples (the
// log's growth over time): a knee (stats.FindKnee) makes it KindBoth; without
// one, the run is a burst when its rate, perMsg bytes per message, exceeds
// the disk's write limit by more than 10% (such a rate cannot last: the page
// cache fills), and sustained otherwise. A knee whose earlier rate was already
// below the disk's limit is not the page cache's (KindSlowed); one whose later
// rate is still above it leaves the run a burst.
func ProducerPhase(r results.Run, perMsg, diskMBps float64) RunPhase {
	s := stats.FindKnee(points(r.Result.Samples), stats.KneeOptions{})
	p := RunPhase{Split: s}
	switch {
	case s.Knee && diskMBps > 0 && s.Before*perMsg/1e6 <= diskMBps:
		p.Kind = KindSlowed
	case s.Knee && diskMBps > 0 && s.After*perMsg/1e6 > 1.1*diskMBps:
		// Slower after the knee, but still faster than the disk: still
		// the page cache absorbing the writes.
		p.Kind = KindBurst
	case s.Knee:
		p.Kind = KindBoth
	case diskMBps <= 0:
		p.Kind = KindUnknown
	case r.Result.MsgsPerSec*perMsg/1e6 > 1.1*diskMBps:
		p.Kind = KindBurst
	default:
		p.Kind = KindSustained
	}
	return p
}

func points(samples []perf.Sample) []stats.Point {
	out := make([]stats.Point, len(samples))
	for i, s := range samples {
		out[i] = stats.Point{T: s.T, N: float64(s.Messages)}
	}
	return out
}

// bytesPerMessage is what one message of r weighs on the disk and on the
// wire: the file growth per message of r's producer runs when measured (so
// compression counts), else the payload plus Kafka's 9-byte header.
func bytesPerMessage(set *results.Set, r results.Run) float64 {
	if r.StorageApparentBytesPerMsg > 0 {
		return r.StorageApparentBytesPerMsg
	}
	if r.System == results.Kafka {
		k := r.Key
		k.Phase = results.Produce
		if r.Variant == results.VariantConsumer || r.Variant == results.VariantConsumerCold {
			k.Variant = results.VariantBatch(50)
		}
		if s := Summary(set.Select(k), func(p results.Run) float64 { return NaNIfZero(p.StorageApparentBytesPerMsg) }); s.N > 0 {
			return s.Median
		}
	}
	if r.Result.Messages > 0 {
		return float64(r.Result.Bytes)/float64(r.Result.Messages) + PaperKafkaOverhead
	}
	return TargetBytesPerMessage
}

// cold reports whether a consumer run read a log dropped from the page cache.
func cold(r results.Run) bool {
	return r.Variant == results.VariantConsumerCold || (r.Conditions != nil && r.Conditions.CacheDrop != "")
}

// runMBps is a run's rate in MB/s (10^6 bytes) of messages as stored.
func runMBps(set *results.Set, r results.Run) float64 {
	return r.Result.MsgsPerSec * bytesPerMessage(set, r) / 1e6
}

// limitShare renders the medians of runs' shares of their limits: a
// producer's of the disk's write limit and of the loopback stream shaped as
// its connection, a consumer's of the loopback fetch stream (hot) or of the
// cold disk read.
func limitShare(set *results.Set, runs []results.Run, lim Limits) string {
	if len(runs) == 0 {
		return "–"
	}
	share := func(limit float64) stats.Summary {
		return Summary(runs, func(r results.Run) float64 {
			if limit <= 0 {
				return math.NaN()
			}
			return runMBps(set, r) / limit
		})
	}
	var parts []string
	add := func(s stats.Summary, of string) {
		if s.N > 0 {
			parts = append(parts, PctOf(s)+" of "+of)
		}
	}
	switch {
	case runs[0].Phase == results.Produce:
		add(share(lim.DiskWrite), "disk write")
		add(share(lim.producerNet()), "loopback")
	case cold(runs[0]):
		add(share(lim.DiskRead), "cold disk read")
	default:
		add(share(lim.fetchNet()), "loopback (fetch)")
	}
	if len(parts) == 0 {
		return "limits not measured"
	}
	return strings.Join(parts, ", ")
}

// writeLimits writes the machine's limits and every main Kafka figure as a
// share of its limit, burst and sustained apart (issue 14).
func writeLimits(w Printf, set *results.Set, c Context) {
	lim, before, after := limitsOf(c)
	if lim.DiskWrite == 0 && lim.Loopback == 0 {
		return
	}
	w("## Kafka against the machine's limits\n\n")
	w("The limits were measured on this machine in the brokers' data directory before the first run and again after the last (how: see *How it was measured*); a share below is of the better of the two, the most the machine did. Rates in MB/s count a message as it is stored and sent (%d bytes for a 200-byte message).\n\n", TargetBytesPerMessage)
	w("| Limit | Before the runs (MB/s) | After the runs (MB/s) | Bounds |\n|---|---|---|---|\n")
	val := func(v float64) string {
		if v <= 0 {
			return "–"
		}
		return stats.Format(v)
	}
	lrow := func(name string, b, a float64, bounds string) {
		if b > 0 || a > 0 {
			w("| %s | %s | %s | %s |\n", name, val(b), val(a), bounds)
		}
	}
	lrow("Disk, sequential write through the page cache + fdatasync", before.DiskWrite, after.DiskWrite, "the producer's sustained rate")
	lrow("Disk, sequential write with O_DIRECT (4 writes in flight)", before.DiskDirect, after.DiskDirect, "what the device takes with a deep queue, which the kernel's writeback of a page-cache writer need not reach")
	lrow("Disk, cold sequential read", before.DiskRead, after.DiskRead, "the cold consumer")
	lrow("Loopback, one TCP stream", before.Loopback, after.Loopback, "any one connection")
	lrow("Loopback, one stream shaped as the producer's", before.LoopbackProducer, after.LoopbackProducer, "the producer's burst")
	lrow("Loopback, one stream shaped as a fetch (sendfile)", before.LoopbackFetch, after.LoopbackFetch, "the hot consumer")
	if after.DiskWrite > 0 && before.DiskWrite > 0 && max(after.DiskWrite, before.DiskWrite)/min(after.DiskWrite, before.DiskWrite) > 1.25 {
		w("\nThe disk's write limit moved by %s× between the two measurements (%s and %s MB/s): the disk is shared with whatever else runs on this machine, and the shares below, of the better measurement, understate how close Kafka came to the disk at its slower moments.\n",
			stats.Format(max(after.DiskWrite, before.DiskWrite)/min(after.DiskWrite, before.DiskWrite)), stats.Format(before.DiskWrite), stats.Format(after.DiskWrite))
	}
	if wb := c.Machine.Writeback; lim.DirtyBytes > 0 && wb != nil && c.Machine.SetBy != "" {
		w("\nFor this run %s set %s (the previous settings were restored at its end): the kernel throttles writers to the disk's pace once the page cache holds %s of unwritten data, as little as a small machine's page cache would absorb, so that a producer run of the paper's length is mostly its sustained phase rather than a burst into memory (issue 14).\n",
			c.Machine.SetBy, wb, HumanSize(float64(lim.DirtyBytes)))
	} else if lim.DirtyBytes > 0 {
		w("\nThe page cache takes about %s of unwritten data (vm.dirty_ratio %d%% of available memory) before the kernel throttles writers to the disk's pace: a producer that writes less than that, faster than the disk, is a burst that ends with the run.\n",
			HumanSize(float64(lim.DirtyBytes)), c.Machine.DirtyRatio)
	}
	w("\n| Figure | What the number is | Messages/s | MB/s | Share of its limit | Runs |\n|---|---|---|---|---|---|\n")
	row := func(fig, what string, runs []results.Run, rate func(results.Run) float64) {
		if len(runs) == 0 {
			return
		}
		s := Summary(runs, rate)
		mb := Summary(runs, func(r results.Run) float64 { return rate(r) * bytesPerMessage(set, r) / 1e6 })
		shareRuns := make([]results.Run, len(runs))
		for i, r := range runs {
			r.Result.MsgsPerSec = rate(r)
			shareRuns[i] = r
		}
		w("| %s | %s | %s | %s | %s | %d |\n", fig, what, Cell(s), Cell(mb), limitShare(set, shareRuns, lim), s.N)
	}
	whole := func(r results.Run) float64 { return r.Result.MsgsPerSec }
	for _, b := range []int{1, 50} {
		runs := sel(set, results.Kafka, results.VariantBatch(b), results.Produce)
		if len(runs) == 0 {
			continue
		}
		fig := fmt.Sprintf("Producer, batch %d", b)
		row(fig, "whole run: "+phaseCounts(set, runs, lim), runs, whole)
		var knees []results.Run
		for _, r := range runs {
			if ProducerPhase(r, bytesPerMessage(set, r), lim.DiskWrite).Kind == KindBoth {
				knees = append(knees, r)
			}
		}
		phase := func(after bool) func(results.Run) float64 {
			return func(r results.Run) float64 {
				s := ProducerPhase(r, bytesPerMessage(set, r), lim.DiskWrite).Split
				if after {
					return s.After
				}
				return s.Before
			}
		}
		row(fig, "burst: before the knee (runs that crossed one)", knees, phase(false))
		row(fig, "sustained: after the knee (runs that crossed one)", knees, phase(true))
	}
	row("Consumer", "hot: the log in the page cache", sel(set, results.Kafka, results.VariantConsumer, results.Consume), whole)
	row("Consumer", "cold: the log dropped from the page cache, read from the disk", sel(set, results.Kafka, results.VariantConsumerCold, results.Consume), whole)
	w("\n")
	writeCPUShare(w, set, c)
	writePhases(w, set, lim)
}

// writeCPUShare says how busy the machine's cores were during the main
// Kafka runs and who used them: a figure far below its disk and loopback
// limits on a machine whose cores were all busy is bound by the CPU.
func writeCPUShare(w Printf, set *results.Set, c Context) {
	var runs []results.Run
	for _, r := range set.Select(results.Key{System: results.Kafka, Experiment: results.Main}) {
		if k := r.Conditions; k != nil && k.WallSeconds > 0 && k.BusyCPUSeconds > 0 {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 || c.Machine.Cores == 0 {
		return
	}
	busy := Summary(runs, func(r results.Run) float64 { return r.Conditions.BusyCPUSeconds / r.Conditions.WallSeconds })
	ours := Summary(runs, func(r results.Run) float64 {
		return (r.BrokerCPUSeconds + r.Conditions.ClientCPUSeconds) / r.Conditions.WallSeconds
	})
	other := Summary(runs, func(r results.Run) float64 { return r.Conditions.OtherCPU(r.BrokerCPUSeconds) })
	load := Summary(runs, func(r results.Run) float64 { return r.Conditions.LoadAverage })
	w("**CPU.** While Kafka's main runs ran, the machine's %d cores were busy %s cores' worth (median; /proc/stat), of which Kafka's broker and perf tool took %s and other processes %s; the load average was %s.",
		c.Machine.Cores, stats.Format(busy.Median), stats.Format(ours.Median), stats.Format(other.Median), Cell(load))
	if busy.Median >= 0.9*float64(c.Machine.Cores) {
		w(" Every core was busy: where a figure is well below its disk and loopback limits, the CPU it could get bound it, not the disk or the network.")
	}
	w("\n\n")
}

// phaseCounts says how many of a producer's runs were of each kind.
func phaseCounts(set *results.Set, runs []results.Run, lim Limits) string {
	n := map[string]int{}
	for _, r := range runs {
		n[ProducerPhase(r, bytesPerMessage(set, r), lim.DiskWrite).Kind]++
	}
	var parts []string
	for _, k := range []string{KindBurst, KindBoth, KindSustained, KindSlowed, KindUnknown} {
		if n[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

// writePhases says, run by run, what each main producer number is.
func writePhases(w Printf, set *results.Set, lim Limits) {
	runs := sel(set, results.Kafka, results.VariantBatch(50), results.Produce)
	if len(runs) == 0 {
		return
	}
	w("**Burst or sustained, run by run (producer, batch 50).** The knee is found on the log's growth over time (sampled every 100 ms): two straight segments are fitted to the cumulative count by least squares, meeting at the sample that fits best; it counts as a knee when the later rate is at least 20%% lower and the two segments remove at least half of one line's squared error, each holding at least 10%% of the run. A knee ends the burst when the rate before it was above the disk's write limit and the rate after it at most 10%% above; a run that stays faster than the disk's write limit (+10%%) is a burst the page cache absorbed; one at or below it from the start is sustained; one that slowed while below it slowed for another reason than the page cache.\n\n")
	for _, r := range runs {
		perMsg := bytesPerMessage(set, r)
		p := ProducerPhase(r, perMsg, lim.DiskWrite)
		written := float64(r.Result.Messages) * perMsg
		switch p.Kind {
		case KindBoth:
			w("- rep %d: %s msg/s until %.1f s (%s written), then %s msg/s (%s of the disk's write limit).\n", r.Rep,
				stats.Format(p.Split.Before), p.Split.KneeT, HumanSize(p.Split.KneeN*perMsg), stats.Format(p.Split.After), pctOf(p.Split.After*perMsg/1e6, lim.DiskWrite))
		case KindSlowed:
			w("- rep %d: %s: %s msg/s until %.1f s, then %s msg/s, both below the disk's write limit as measured (%s, then %s of it): the page cache filling up explains it only if the disk was slower then than when measured.\n", r.Rep, p.Kind,
				stats.Format(p.Split.Before), p.Split.KneeT, stats.Format(p.Split.After), pctOf(p.Split.Before*perMsg/1e6, lim.DiskWrite), pctOf(p.Split.After*perMsg/1e6, lim.DiskWrite))
		case KindBurst:
			if p.Split.Knee {
				w("- rep %d: burst: %s msg/s until %.1f s, then %s msg/s, still %s of the disk's write limit, for %.1f s in all (%s written%s): the run ended before the page cache stopped absorbing it.\n", r.Rep,
					stats.Format(p.Split.Before), p.Split.KneeT, stats.Format(p.Split.After), pctOf(p.Split.After*perMsg/1e6, lim.DiskWrite), r.Result.Seconds, HumanSize(written), dirtyNote(written, lim))
				continue
			}
			w("- rep %d: burst: %s msg/s, %s of the disk's write limit, for %.1f s (%s written%s); no knee: the run ended before the page cache stopped absorbing it.\n", r.Rep,
				stats.Format(r.Result.MsgsPerSec), pctOf(r.Result.MsgsPerSec*perMsg/1e6, lim.DiskWrite), r.Result.Seconds, HumanSize(written), dirtyNote(written, lim))
		default:
			w("- rep %d: %s: %s msg/s, %s of the disk's write limit, for %.1f s (%s written); no knee.\n", r.Rep, p.Kind,
				stats.Format(r.Result.MsgsPerSec), pctOf(r.Result.MsgsPerSec*perMsg/1e6, lim.DiskWrite), r.Result.Seconds, HumanSize(written))
		}
	}
	w("\n")
}

func dirtyNote(written float64, lim Limits) string {
	if lim.DirtyBytes <= 0 {
		return ""
	}
	return fmt.Sprintf(", against the page cache's ~%s", HumanSize(float64(lim.DirtyBytes)))
}

func pctOf(v, limit float64) string {
	if limit <= 0 || math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*v/limit)
}

// usedLimits are the limits the report's shares are of.
func usedLimits(c Context) Limits {
	used, _, _ := limitsOf(c)
	return used
}

// writeWhatTheyAre says, under the paper's table, what Kafka's numbers in it
// are: whole-run rates, each producer run a burst into the page cache or at
// the disk's pace, the consumer reading from the page cache (issue 14).
func writeWhatTheyAre(w Printf, set *results.Set, c Context) {
	lim := usedLimits(c)
	var parts []string
	for _, b := range []int{1, 50} {
		if runs := sel(set, results.Kafka, results.VariantBatch(b), results.Produce); len(runs) > 0 && lim.DiskWrite > 0 {
			parts = append(parts, fmt.Sprintf("batch %d: %s", b, phaseCounts(set, runs, lim)))
		}
	}
	if len(parts) == 0 {
		return
	}
	w("What Kafka's numbers above are: whole-run rates of the producer (%s; *burst*: faster than the disk, the page cache absorbing the writes; *sustained*: at or below the disk's rate) and of the consumer reading from the page cache (hot); the cold consumer, the shares of the machine's limits and each run's phase are under *Kafka against the machine's limits*.\n\n",
		strings.Join(parts, "; "))
}
