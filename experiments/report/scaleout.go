package report

import (
	"fmt"
	"math"

	"github.com/netdb11/kafka/experiments/figures"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// busyLimit is the share of a core or link from which the report calls it
// saturated.
const busyLimit = 0.9

// scaleOutPoint summarises the scale-out runs with one broker count.
type scaleOutPoint struct {
	brokers int
	// rate is in msg/s; link, core0 and client are the client link's steady
	// utilisation and the busy shares of the broker core and the client core (0..1).
	rate, link, core0, client stats.Summary
	// brokerCPUPerMsg is broker CPU seconds per million messages, all brokers together.
	brokerCPUPerMsg stats.Summary
	// brokerShare is the brokers' own CPU time over the timed run: the share
	// of core 0 they used.
	brokerShare stats.Summary
}

func scaleOutPoints(set *results.Set) []scaleOutPoint {
	runs := set.Select(results.Key{System: results.Kafka, Experiment: results.ScaleOut, Phase: results.Produce})
	var out []scaleOutPoint
	for _, p := range results.Params(runs) {
		var at []results.Run
		for _, r := range runs {
			if r.Param == p {
				at = append(at, r)
			}
		}
		out = append(out, scaleOutPoint{
			brokers: int(p),
			rate:    summary(at, results.Throughput),
			link:    summary(at, func(r results.Run) float64 { return nanIfZero(r.LinkUtilisation) }),
			core0:   summary(at, func(r results.Run) float64 { return nanIfZero(r.BrokerCoreBusy) }),
			client:  summary(at, func(r results.Run) float64 { return nanIfZero(r.ClientCoreBusy) }),
			brokerShare: summary(at, func(r results.Run) float64 {
				if r.Result.Seconds == 0 || r.BrokerCPUSeconds == 0 {
					return math.NaN()
				}
				return r.BrokerCPUSeconds / r.Result.Seconds
			}),
			brokerCPUPerMsg: summary(at, func(r results.Run) float64 {
				if r.Result.Messages == 0 || r.BrokerCPUSeconds == 0 {
					return math.NaN()
				}
				return r.BrokerCPUSeconds / float64(r.Result.Messages) * 1e6
			}),
		})
	}
	return out
}

func nanIfZero(x float64) float64 {
	if x == 0 {
		return math.NaN()
	}
	return x
}

// pctOf renders a fraction's median as a percentage, or "n/a".
func pctOf(s stats.Summary) string {
	if s.N == 0 || math.IsNaN(s.Median) {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*s.Median)
}

func scaleOutFigure(set *results.Set) figures.Figure {
	runs := set.Select(results.Key{System: results.Kafka, Experiment: results.ScaleOut, Phase: results.Produce})
	pts := scaleOutPoints(set)
	if len(pts) == 0 {
		return figures.Figure{}
	}
	measured := sweep("one producer host, batch 50", runs, identity, results.Throughput)
	linear := figures.Series{Name: "linear from the first count"}
	base := pts[0]
	for _, p := range pts {
		linear.X = append(linear.X, float64(p.brokers))
		linear.Y = append(linear.Y, base.rate.Median*float64(p.brokers)/float64(base.brokers))
	}
	pctSeries := func(name string, f func(results.Run) float64) figures.Series {
		return sweep(name, runs, identity, func(r results.Run) float64 { return 100 * nanIfZero(f(r)) })
	}
	tput := figures.Panel{Title: "Aggregate producer throughput", XLabel: "broker hosts", YLabel: "messages/s",
		Lines: []figures.Series{measured, linear}}
	if cap := linkCapMsgs(runs); cap > 0 {
		tput.HLine, tput.HLineLabel = cap, "client link full (1 Gbit)"
	}
	return figures.Figure{Panels: []figures.Panel{tput, {
		Title: "What limits it", XLabel: "broker hosts", YLabel: "% busy",
		Lines: []figures.Series{
			pctSeries("client link (steady state)", func(r results.Run) float64 { return r.LinkUtilisation }),
			pctSeries("core 0 (all broker hosts)", func(r results.Run) float64 { return r.BrokerCoreBusy }),
			pctSeries("core 1 (client host)", func(r results.Run) float64 { return r.ClientCoreBusy }),
		},
	}}}
}

// linkCapMsgs is the message rate at which the client's link is full: the
// link's rate over the wire bytes per message the runs measured (frames and
// headers included), or 0 when unknown.
func linkCapMsgs(runs []results.Run) float64 {
	var caps []float64
	for _, r := range runs {
		if r.LinkUtilisationTimed > 0 && r.Result.Messages > 0 && r.Result.Seconds > 0 && r.LinkBytesSent > 0 {
			// rate = LinkBytesSent*8 / Seconds / utilisation
			rate := float64(r.LinkBytesSent) * 8 / r.Result.Seconds / r.LinkUtilisationTimed
			caps = append(caps, rate/8/(float64(r.LinkBytesSent)/float64(r.Result.Messages)))
		}
	}
	if len(caps) == 0 {
		return 0
	}
	return stats.Summarize(caps).Median
}

// writeScaleOut writes the scale-out section: the figure, a table per broker
// count and a conclusion computed from the runs.
func writeScaleOut(w func(string, ...any), set *results.Set, figs []Fig) {
	pts := scaleOutPoints(set)
	if len(pts) == 0 {
		return
	}
	w("## Scale-out: brokers 1 to %d\n\n", pts[len(pts)-1].brokers)
	w("Paper §3 and §6: a topic is spread over the brokers of a cluster, so more brokers take more load. One producer host (batch 50, one thread, 0.7's random partitioner over the static broker list) sends to a topic with one partition on each of N broker hosts; each host has its own 1 Gbit link to a bridge. Every broker host is pinned to core 0 and the client to core 1: this machine has two cores.\n\n")
	for _, f := range figs {
		if f.Key == string(results.ScaleOut) {
			w("![%s](%s)\n\n", f.Title, f.File)
		}
	}
	w("| Broker hosts | Messages/s | Client link (steady state) | Core 0 busy (brokers) | Core 1 busy (client) | Broker CPU s per million messages | Runs |\n|---|---|---|---|---|---|---|\n")
	for _, p := range pts {
		w("| %d | %s | %s | %s | %s | %s | %d |\n", p.brokers, cell(p.rate), pctOf(p.link), pctOf(p.core0), pctOf(p.client), cellNaN(p.brokerCPUPerMsg), p.rate.N)
	}
	w("\n**Conclusion.** %s\n\n", concludeScaleOut(pts))
}

// concludeScaleOut says how the rate grew with the brokers and what stopped
// it, from the runs alone.
func concludeScaleOut(pts []scaleOutPoint) string {
	if len(pts) < 2 {
		return "Only one broker count was run; nothing to compare."
	}
	first, last := pts[0], pts[len(pts)-1]
	factor := float64(last.brokers) / float64(first.brokers)
	s := fmt.Sprintf("From %d to %d broker hosts the aggregate rate changed by %s: %s× for %s× the brokers (linear scaling would be %s×).",
		first.brokers, last.brokers, change(first.rate, last.rate), stats.Format(last.rate.Median/first.rate.Median), num(factor), num(factor))
	linkFull := !math.IsNaN(first.link.Median) && first.link.Median >= busyLimit
	if linkFull {
		s += fmt.Sprintf(" With %s the client's link was already %s full in the steady state: one producer host cannot send more than its 1 Gbit link carries, however many brokers receive, so this test caps the aggregate at the client's link, not at the brokers or the design.", brokerCount(first.brokers), pctOf(first.link))
	}
	if !math.IsNaN(first.core0.Median) && !math.IsNaN(last.core0.Median) {
		s += fmt.Sprintf(" Core 0, shared by all broker hosts and by anything else running on this machine, was %s busy with %s and %s with %s; the brokers' own share of it was %s and %s.",
			pctOf(first.core0), brokerCount(first.brokers), pctOf(last.core0), brokerCount(last.brokers), pctOf(first.brokerShare), pctOf(last.brokerShare))
		switch busy, own := last.core0.Median, last.brokerShare.Median; {
		case busy >= busyLimit && !math.IsNaN(own) && own >= busy/2:
			s += fmt.Sprintf(" With %s the testbed's one broker core was full, mostly with the brokers: that core, not the design, stops them from taking more.", brokerCount(last.brokers))
		case busy >= busyLimit || first.core0.Median >= busyLimit:
			s += " Where the core was nearly full, most of it was other work on this shared machine, which the testbed cannot keep off core 0; the brokers themselves had CPU to spare."
		default:
			s += " The brokers had CPU to spare."
		}
	}
	if sh := first.brokerShare; linkFull && sh.N > 0 && sh.Median > 0 && sh.Median < 1 {
		s += fmt.Sprintf(" Taking a full link cost the broker processes %s of core 0; by that measure the one broker core could take about %s× one link's load before it, not the design, stopped more brokers from helping — an optimistic bound, since on veth links the kernel's receive work for the brokers runs on the sending (client's) core.", pctOf(sh), stats.Format(1/sh.Median))
	}
	if !math.IsNaN(last.client.Median) && last.client.Median >= busyLimit {
		s += fmt.Sprintf(" The client's core was %s busy: the producer host's CPU limits the rate too.", pctOf(last.client))
	}
	if a, b := first.brokerCPUPerMsg, last.brokerCPUPerMsg; a.N > 0 && b.N > 0 && a.Median > 0 {
		s += fmt.Sprintf(" The brokers together spent %s CPU seconds per million messages with %d and %s with %d (%s)",
			stats.Format(a.Median), first.brokers, stats.Format(b.Median), last.brokers, pct(b.Median, a.Median))
		if b.Median <= 1.25*a.Median {
			s += ": the work per message is divided among the brokers, not repeated, so brokers on machines of their own, each with its own cores and link, would each take their share; this two-core testbed cannot show that as throughput."
		} else {
			s += ": more brokers cost more CPU per message here (a connection and a log per broker, and the brokers time-sharing one core)."
		}
	}
	return s
}

func brokerCount(n int) string {
	if n == 1 {
		return "1 broker"
	}
	return fmt.Sprintf("%d brokers", n)
}
