package experiments

import (
	"fmt"
	"strconv"

	"github.com/netdb11/kafka/experiments/figures"
	"github.com/netdb11/kafka/experiments/report"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// confirmExp names the runs of the part.
const confirmExp results.Experiment = "confirm"

// confirmAblation is the acknowledgement ablation. Paper §5 gives, as the
// first reason for the producer's rate, that "the Kafka producer currently
// doesn't wait for acknowledgements from the broker and sends messages as
// faster as the broker can handle". kafka-producer-perf-test's --confirm
// says when the producer proves the broker took its messages: close (one
// round trip per connection at the end of the run, as 0.7, whose PRODUCE
// has no response) or send (a round trip after every request, as a producer
// waiting for each acknowledgement would). At batch 1 and at batch 50.
var confirmAblation = ablation(confirmSteps, report.Ablation{
	Experiment: confirmExp,
	Title:      "acknowledgements: confirm at close vs per send",
	What:       "Paper §5: the producer does not wait for acknowledgements. The same producer confirms once, at the end of the run (`--confirm=close`, 0.7's behaviour), or waits for a round trip after every request (`--confirm=send`), at batch 1 and 50.",
	Figure:     report.Figure{File: "fig-ablation-confirm.png", Title: "Ablation: producer throughput, confirmed at close vs after every send", Build: confirmFigure},
	Conclude:   concludeConfirm,
})

// confirmModes are the --confirm values the ablation compares.
var confirmModes = []string{"close", "send"}

// confirmBatches are its batch sizes.
var confirmBatches = []int{1, 50}

func confirmVariant(mode string, batch int) results.Variant {
	return results.Setting("confirm/batch", mode+"/"+strconv.Itoa(batch))
}

func confirmSteps(l *lab) []step {
	b := &broker{name: "confirm"}
	p := []step{l.startStep("confirm ablation: start broker", b)}
	for _, batch := range confirmBatches {
		for _, mode := range confirmModes {
			v := confirmVariant(mode, batch)
			msgs := l.cfg.AblationMessages
			if batch == 1 {
				msgs = min(msgs, l.cfg.KafkaBatch1Messages)
				if mode == "send" {
					// One round trip per message (6,000-20,000 msg/s): a
					// fiftieth keeps the run to seconds.
					msgs = max(msgs/50, 1)
				}
			}
			for rep := 1; rep <= l.cfg.Repeats; rep++ {
				p = append(p, l.produceStep(fmt.Sprintf("confirm ablation, %s (rep %d)", v, rep), b, kafkaRun(confirmExp, v, float64(batch), results.Produce, rep),
					produceSpec{topic: fmt.Sprintf("confirm-%s-%d-r%d", mode, batch, rep), messages: msgs, batch: batch, codec: "none", confirm: mode}, nil))
			}
		}
	}
	return append(p, stopStep("confirm ablation: stop broker", b))
}

func confirmFigure(set *results.Set) figures.Figure {
	cats, tput := report.VariantBars(set, confirmExp, results.Produce, results.Throughput)
	if len(cats) == 0 {
		return figures.Figure{}
	}
	tput.Name = "producer"
	return figures.Figure{Panels: []figures.Panel{
		{Title: "Producer throughput by --confirm and batch size", YLabel: "messages/s", LogY: true, Categories: cats, Bars: []figures.BarSeries{tput}},
	}}
}

func concludeConfirm(set *results.Set) string {
	s := ""
	for _, batch := range confirmBatches {
		closed := report.VariantSummary(set, confirmExp, confirmVariant("close", batch), results.Produce, results.Throughput)
		sent := report.VariantSummary(set, confirmExp, confirmVariant("send", batch), results.Produce, results.Throughput)
		if closed.N == 0 || sent.N == 0 {
			continue
		}
		s += fmt.Sprintf("At batch %d, waiting for a round trip after every request changed the producer's rate by %s: confirming once at close was %s× as fast. ",
			batch, report.Change(closed, sent), stats.Format(closed.Median/sent.Median))
	}
	if s == "" {
		return "Not enough runs to compare."
	}
	return s + "Not waiting for acknowledgements is what the first reason of paper §5 credits; this is its measure on this machine."
}
