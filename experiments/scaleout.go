package experiments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/netdb11/kafka/experiments/figures"
	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/report"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// scaleOutExp names the runs of the part.
const scaleOutExp results.Experiment = "scaleout"

// scaleOut is the scale-out. Paper §3 and §6 claim a topic spread over more brokers takes
// proportionally more load. For each broker count N a testbed of N broker
// hosts and one client host comes up, N kafka-servers start (one partition
// each), and one producer at batch 50 spreads its batches over all of them
// (0.7's random partitioner over the static broker.list). Every broker host
// is pinned to core 0 and the client to core 1, so the testbed's two cores,
// not the design, bound what N brokers can take; the runs record how busy each
// core and the client's link were.
var scaleOut = part{
	name:  scaleOutExp,
	steps: scaleOutSteps,
	section: report.Section{
		Has:     func(set *results.Set) bool { return len(scaleOutPoints(set)) > 0 },
		Figures: []report.Figure{{File: "fig-scaleout.png", Title: "Scale-out: aggregate producer throughput against broker hosts, and what limits it", Build: scaleOutFigure}},
		Write:   writeScaleOut,
	},
}

// cluster is the scale-out's testbed of N broker hosts with a broker on each:
// the step that brings it up hands it to the producer steps and to the step
// that takes it down.
type cluster struct {
	n       int
	tb      *kit.Testbed
	brokers []*kafkaBroker
}

func scaleOutSteps(l *lab) []step {
	if !l.cfg.hasSystem(results.Kafka) {
		return nil
	}
	var p []step
	for _, n := range l.cfg.ScaleOutBrokers {
		c := &cluster{n: n}
		label := fmt.Sprintf("scale-out, %d broker(s)", n)
		p = append(p, step{label: label + ": testbed up, start brokers", system: results.Kafka, run: func(ctx context.Context) error {
			return l.startCluster(ctx, c)
		}})
		for rep := 1; rep <= l.cfg.Repeats; rep++ {
			run := kafkaRun(scaleOutExp, results.VariantBrokers(n), float64(n), results.Produce, rep)
			p = append(p, step{label: fmt.Sprintf("%s: producer batch=50 (rep %d)", label, rep), system: results.Kafka, run: func(ctx context.Context) error {
				return l.measure(ctx, run, func(r *results.Run) error {
					if len(c.brokers) != n {
						return fmt.Errorf("experiments: %d of %d brokers running", len(c.brokers), n)
					}
					return l.scaleOutProduce(ctx, c.tb, c.brokers, fmt.Sprintf("scaleout-r%d", rep), r)
				})
			}})
		}
		p = append(p, step{label: label + ": stop brokers, testbed down", system: results.Kafka, run: func(context.Context) error {
			return c.stop()
		}})
	}
	return p
}

// startCluster brings up c's testbed and starts a broker on each broker host.
func (l *lab) startCluster(ctx context.Context, c *cluster) (err error) {
	if c.tb, err = kit.StartEmulated(ctx, l.cfg.RepoDir, l.log, c.n); err != nil {
		return err
	}
	tb := c.tb
	l.cleanups.Add(func() {
		if err := tb.Close(); err != nil {
			l.log.Warn("taking the scale-out testbed down", "err", err)
		}
	})
	l.log.Info("scale-out testbed", "brokers", c.n, "testbed", tb.Description)
	for i := range c.n {
		b, err := l.startKafkaOn(ctx, tb, i, fmt.Sprintf("scaleout-n%d-b%d", c.n, i), nil)
		if err != nil {
			return err
		}
		c.brokers = append(c.brokers, b)
	}
	return nil
}

// stop stops c's brokers and takes its testbed down.
func (c *cluster) stop() error {
	var errs []error
	for _, b := range c.brokers {
		errs = append(errs, b.stop())
	}
	c.brokers = nil
	if c.tb != nil {
		errs = append(errs, c.tb.Close())
	}
	return errors.Join(errs...)
}

// scaleOutProduce runs one producer on tb's client host against every broker
// of brokers and records the aggregate rate, the brokers' CPU time, how busy
// the broker and client cores were, and how the bytes spread over the brokers.
func (l *lab) scaleOutProduce(ctx context.Context, tb *kit.Testbed, brokers []*kafkaBroker, topic string, run *results.Run) error {
	var list []string
	for _, b := range brokers {
		list = append(list, b.brokerList())
	}
	argv := []string{l.bin(kafkaProducerBin),
		"--broker-list=" + strings.Join(list, ","),
		"--topic=" + topic,
		"--messages=" + strconv.FormatInt(l.cfg.KafkaMessages, 10),
		"--message-size=" + strconv.Itoa(l.cfg.MessageSize),
		"--batch-size=50",
		"--compression-codec=0",
		"--threads=1",
		"--progress=false",
		"--json",
	}
	_, tuned := l.socketTuning()
	argv = append(argv, tuned...)
	run.Config = mergeConfig(brokers[0].props, map[string]string{
		"driver": kafkaProducerBin, "topic": topic, "messages": strconv.FormatInt(l.cfg.KafkaMessages, 10),
		"message_size": strconv.Itoa(l.cfg.MessageSize), "batch_size": "50", "compression": "none",
		"brokers": strconv.Itoa(len(brokers)), "broker_list": strings.Join(list, ","),
		"partitioning": "each batch to a random broker's partition (0.7's random partitioner over the static broker.list)",
		"testbed":      tb.Description,
	})
	if len(tuned) > 0 {
		run.Config["producer_socket_buffer"] = "0 (autotuned)"
		run.Config["socket_buffers"] = autotunedSockets
	}
	cpu0 := brokersCPU(brokers)
	stat0, statErr0 := kit.ReadCPUStat()
	res, err := kit.DriverRun{Host: tb.Client, Argv: argv, LogPath: l.logPath(run.ID), Link: tb.WatchLink(run, l.log)}.Run(ctx)
	stat1, statErr1 := kit.ReadCPUStat()
	if err != nil {
		return err
	}
	run.Result = res
	run.BrokerCPUSeconds = brokersCPU(brokers) - cpu0
	if statErr0 == nil && statErr1 == nil {
		run.BrokerCoreBusy = kit.CoreBusy(stat0, stat1, tb.BrokerCPU)
		run.ClientCoreBusy = kit.CoreBusy(stat0, stat1, tb.ClientCPU)
	}
	var spread []string
	for _, b := range brokers {
		_, app := b.topicBytes(topic)
		spread = append(spread, fmt.Sprintf("broker %d: %.1f MB", b.id, float64(app)/1e6))
	}
	run.Config["log_bytes_per_broker"] = strings.Join(spread, ", ")
	return nil
}

// brokersCPU sums the CPU seconds of the brokers' processes so far.
func brokersCPU(brokers []*kafkaBroker) float64 {
	var s float64
	for _, b := range brokers {
		if c, err := b.srv.CPUSeconds(); err == nil {
			s += c
		}
	}
	return s
}

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
	runs := set.Select(results.Key{System: results.Kafka, Experiment: scaleOutExp, Phase: results.Produce})
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
			rate:    report.Summary(at, results.Throughput),
			link:    report.Summary(at, func(r results.Run) float64 { return report.NaNIfZero(r.LinkUtilisation) }),
			core0:   report.Summary(at, func(r results.Run) float64 { return report.NaNIfZero(r.BrokerCoreBusy) }),
			client:  report.Summary(at, func(r results.Run) float64 { return report.NaNIfZero(r.ClientCoreBusy) }),
			brokerShare: report.Summary(at, func(r results.Run) float64 {
				if r.Result.Seconds == 0 || r.BrokerCPUSeconds == 0 {
					return math.NaN()
				}
				return r.BrokerCPUSeconds / r.Result.Seconds
			}),
			brokerCPUPerMsg: report.Summary(at, func(r results.Run) float64 {
				if r.Result.Messages == 0 || r.BrokerCPUSeconds == 0 {
					return math.NaN()
				}
				return r.BrokerCPUSeconds / float64(r.Result.Messages) * 1e6
			}),
		})
	}
	return out
}

func scaleOutFigure(set *results.Set) figures.Figure {
	runs := set.Select(results.Key{System: results.Kafka, Experiment: scaleOutExp, Phase: results.Produce})
	pts := scaleOutPoints(set)
	if len(pts) == 0 {
		return figures.Figure{}
	}
	measured := report.Sweep("one producer host, batch 50", runs, report.Identity, results.Throughput)
	linear := figures.Series{Name: "linear from the first count"}
	base := pts[0]
	for _, p := range pts {
		linear.X = append(linear.X, float64(p.brokers))
		linear.Y = append(linear.Y, base.rate.Median*float64(p.brokers)/float64(base.brokers))
	}
	pctSeries := func(name string, f func(results.Run) float64) figures.Series {
		return report.Sweep(name, runs, report.Identity, func(r results.Run) float64 { return 100 * report.NaNIfZero(f(r)) })
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
func writeScaleOut(w report.Printf, set *results.Set, _ report.Context, figs []report.Fig) {
	pts := scaleOutPoints(set)
	w("## Scale-out: brokers 1 to %d\n\n", pts[len(pts)-1].brokers)
	w("Paper §3 and §6: a topic is spread over the brokers of a cluster, so more brokers take more load. One producer host (batch 50, one thread, 0.7's random partitioner over the static broker list) sends to a topic with one partition on each of N broker hosts; each host has its own 1 Gbit link to a bridge. Every broker host is pinned to core 0 and the client to core 1: this machine has two cores.\n\n")
	for _, f := range figs {
		w("![%s](%s)\n\n", f.Title, f.File)
	}
	w("| Broker hosts | Messages/s | Client link (steady state) | Core 0 busy (brokers) | Core 1 busy (client) | Broker CPU s per million messages | Runs |\n|---|---|---|---|---|---|---|\n")
	for _, p := range pts {
		w("| %d | %s | %s | %s | %s | %s | %d |\n", p.brokers, report.Cell(p.rate), report.PctOf(p.link), report.PctOf(p.core0), report.PctOf(p.client), report.CellNaN(p.brokerCPUPerMsg), p.rate.N)
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
		first.brokers, last.brokers, report.Change(first.rate, last.rate), stats.Format(last.rate.Median/first.rate.Median), report.Num(factor), report.Num(factor))
	linkFull := !math.IsNaN(first.link.Median) && first.link.Median >= busyLimit
	if linkFull {
		s += fmt.Sprintf(" With %s the client's link was already %s full in the steady state: one producer host cannot send more than its 1 Gbit link carries, however many brokers receive, so this test caps the aggregate at the client's link, not at the brokers or the design.", brokerCount(first.brokers), report.PctOf(first.link))
	}
	if !math.IsNaN(first.core0.Median) && !math.IsNaN(last.core0.Median) {
		s += fmt.Sprintf(" Core 0, shared by all broker hosts and by anything else running on this machine, was %s busy with %s and %s with %s; the brokers' own share of it was %s and %s.",
			report.PctOf(first.core0), brokerCount(first.brokers), report.PctOf(last.core0), brokerCount(last.brokers), report.PctOf(first.brokerShare), report.PctOf(last.brokerShare))
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
		s += fmt.Sprintf(" Taking a full link cost the broker processes %s of core 0; by that measure the one broker core could take about %s× one link's load before it, not the design, stopped more brokers from helping — an optimistic bound, since on veth links the kernel's receive work for the brokers runs on the sending (client's) core.", report.PctOf(sh), stats.Format(1/sh.Median))
	}
	if !math.IsNaN(last.client.Median) && last.client.Median >= busyLimit {
		s += fmt.Sprintf(" The client's core was %s busy: the producer host's CPU limits the rate too.", report.PctOf(last.client))
	}
	if a, b := first.brokerCPUPerMsg, last.brokerCPUPerMsg; a.N > 0 && b.N > 0 && a.Median > 0 {
		s += fmt.Sprintf(" The brokers together spent %s CPU seconds per million messages with %d and %s with %d (%s)",
			stats.Format(a.Median), first.brokers, stats.Format(b.Median), last.brokers, report.Pct(b.Median, a.Median))
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
