package report

import (
	"github.com/netdb11/kafka/experiments/results"
)

// Ablation describes the section of one ablation of Kafka: what it isolates,
// its figure, a table of every configuration and phase, and its conclusion.
type Ablation struct {
	// Experiment names the ablation's runs (Kafka's).
	Experiment results.Experiment
	// Title heads the section ("sendfile vs read+write").
	Title string
	// What says which design decision it isolates and how, citing the paper.
	What string
	// Figure is the ablation's figure.
	Figure Figure
	// Conclude computes the conclusion from the runs.
	Conclude func(*results.Set) string
}

// ablationsGroup heads the ablations' sections.
const ablationsGroup = "## Ablations\n\nEach changes one design decision of Kafka and nothing else; each configuration runs repeatedly, and the table gives median [min–max].\n\n"

// Section returns the ablation's section of the report, under the
// ablations' heading; it is left out when the set has none of its runs.
func (a Ablation) Section() Section {
	return Section{
		Group: ablationsGroup,
		Has: func(set *results.Set) bool {
			return len(set.Select(results.Key{System: results.Kafka, Experiment: a.Experiment})) > 0
		},
		Figures: []Figure{a.Figure},
		Write:   a.write,
	}
}

func (a Ablation) write(w Printf, set *results.Set, c Context, figs []Fig) {
	runs := set.Select(results.Key{System: results.Kafka, Experiment: a.Experiment})
	w("### %s\n\n%s\n\n", a.Title, a.What)
	for _, f := range figs {
		w("![%s](%s)\n\n", f.Title, f.File)
	}
	w("| Configuration | Phase | Messages/s | MB/s | Share of its limit | Bytes on disk/msg | Broker RSS (MiB) | Broker CPU (s) | Runs |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, v := range results.Variants(runs) {
		for _, ph := range []results.Phase{results.Produce, results.Consume} {
			rs := set.Select(results.Key{System: results.Kafka, Experiment: a.Experiment, Variant: v, Phase: ph})
			if len(rs) == 0 {
				continue
			}
			w("| %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", v, ph,
				Cell(Summary(rs, results.Throughput)),
				Cell(Summary(rs, func(r results.Run) float64 { return r.Result.MBPerSec })),
				limitShare(set, rs, usedLimits(c)),
				CellNaN(Summary(rs, results.Storage)),
				CellNaN(Summary(rs, RSSMB)),
				CellNaN(Summary(rs, func(r results.Run) float64 { return r.BrokerCPUSeconds })),
				len(rs))
		}
	}
	w("\n**Conclusion.** %s\n\n", a.Conclude(set))
}
