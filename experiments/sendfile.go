package experiments

import (
	"fmt"
	"strconv"

	"github.com/netdb11/kafka/experiments/figures"
	"github.com/netdb11/kafka/experiments/report"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// sendfileExp names the runs of the part.
const sendfileExp results.Experiment = "sendfile"

// sendfileAblation is the sendfile ablation. Paper §3.1: the consumer's fetches are served with
// sendfile, the log's bytes going from the page cache to the socket without a
// copy through user space, instead of read+write. One log per mode, read
// Repeats times from the page cache; the broker's CPU time per GiB shows the
// copies saved.
var sendfileAblation = ablation(sendfileSteps, report.Ablation{
	Experiment: sendfileExp,
	Title:      "sendfile vs read+write",
	What:       "Paper §3.1: fetches are served with sendfile, skipping two copies and a system call. The same log is read with `fetch.use.sendfile` on and off; the broker's CPU time per GiB shows the copies.",
	Figure:     report.Figure{File: "fig-ablation-sendfile.png", Title: "Ablation: sendfile vs read+write on the fetch path", Build: sendfileFigure},
	Conclude:   concludeSendfile,
})

func sendfileSteps(l *lab) []step {
	var p []step
	for _, on := range []bool{true, false} {
		v := results.Setting("sendfile", strconv.FormatBool(on))
		label := "sendfile ablation, " + v.String()
		b := &broker{name: "sendfile-" + strconv.FormatBool(on), props: map[string]string{"fetch.use.sendfile": strconv.FormatBool(on)}}
		filled := &produced{}
		p = append(p, l.startStep(label+": start broker", b),
			l.produceStep(label+": fill log", b, kafkaRun(sendfileExp, v, 0, results.Produce, 1),
				produceSpec{topic: "sendfile", messages: l.cfg.AblationMessages, batch: 50, codec: "none"}, filled))
		for rep := 1; rep <= l.cfg.Repeats; rep++ {
			p = append(p, l.consumeStep(fmt.Sprintf("%s: consumer (rep %d)", label, rep), b, kafkaRun(sendfileExp, v, 0, results.Consume, rep), filled, 0))
		}
		p = append(p, stopStep(label+": stop broker", b))
	}
	return p
}

func sendfileFigure(set *results.Set) figures.Figure {
	cats, tput := report.VariantBars(set, sendfileExp, results.Consume, results.Throughput)
	_, cpu := report.VariantBars(set, sendfileExp, results.Consume, report.CPUPerGB)
	if len(cats) == 0 {
		return figures.Figure{}
	}
	return figures.Figure{Panels: []figures.Panel{
		{Title: "Consumer throughput", YLabel: "messages/s", Categories: cats, Bars: []figures.BarSeries{tput}},
		{Title: "Broker CPU per GiB consumed", YLabel: "CPU seconds / GiB", Categories: cats, Bars: []figures.BarSeries{cpu}},
	}}
}

func concludeSendfile(set *results.Set) string {
	on := report.VariantSummary(set, sendfileExp, results.Setting("sendfile", "true"), results.Consume, results.Throughput)
	off := report.VariantSummary(set, sendfileExp, results.Setting("sendfile", "false"), results.Consume, results.Throughput)
	if on.N == 0 || off.N == 0 {
		return "Not enough runs to compare."
	}
	cpuOn := report.VariantSummary(set, sendfileExp, results.Setting("sendfile", "true"), results.Consume, report.CPUPerGB)
	cpuOff := report.VariantSummary(set, sendfileExp, results.Setting("sendfile", "false"), results.Consume, report.CPUPerGB)
	s := fmt.Sprintf("Replacing sendfile with read+write changed the consumer's rate by %s.", report.Change(on, off))
	if cpuOn.N == 0 || cpuOff.N == 0 {
		return s
	}
	s += fmt.Sprintf(" The broker spent %s CPU seconds per GiB with sendfile and %s with read+write (%s",
		stats.Format(cpuOn.Median), stats.Format(cpuOff.Median), report.Pct(cpuOff.Median, cpuOn.Median))
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
