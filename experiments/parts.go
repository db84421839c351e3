package experiments

import (
	"slices"

	"github.com/netdb11/kafka/experiments/report"
	"github.com/netdb11/kafka/experiments/results"
)

// part is one figure, table or ablation of the report: the steps that measure
// it, the section of report.md that reports it, and the programs it needs.
// Each part is declared in a file of its own and listed once in parts; an
// experiment is added by adding its file and its line there.
type part struct {
	// name is the part's experiment: its runs' Experiment and, for an
	// ablation, its name in --ablations.
	name results.Experiment
	// ablation marks an ablation of Kafka: it runs when Kafka is selected and
	// --ablations names it.
	ablation bool
	// optIn keeps an ablation out of the default --ablations: it runs only
	// when named (the replication part, which needs ZooKeeper).
	optIn bool
	// steps returns the part's steps for the lab's configuration; none when
	// the configuration selects none of them.
	steps func(l *lab) []step
	// binaries lists the programs in BinDir its steps run besides Kafka's
	// broker and perf tools (nil: none).
	binaries func(Config) []string
	// section reports the part's runs.
	section report.Section
}

// parts lists every part in the order the plan runs them and report.md shows
// them: the paper's comparison, the scale-out, then the ablations.
var parts = []part{
	comparison,
	scaleOut,
	sendfileAblation,
	flushAblation,
	batchAblation,
	compressionAblation,
	partitionsAblation,
	growthAblation,
	confirmAblation,
	replicationPart,
	pipelinePart,
}

// ablation is the part of an ablation of Kafka: its steps, the standard
// ablation section, and the programs besides Kafka's it runs.
func ablation(steps func(*lab) []step, a report.Ablation, binaries ...string) part {
	p := part{name: a.Experiment, ablation: true, steps: steps, section: a.Section()}
	if len(binaries) > 0 {
		p.binaries = func(Config) []string { return binaries }
	}
	return p
}

// AllAblations are the ablations' names, as --ablations takes them, each with
// its own figure; DefaultAblations leaves out the opt-in ones.
var (
	AllAblations     = ablationNames(true)
	DefaultAblations = ablationNames(false)
)

func ablationNames(optIn bool) []results.Experiment {
	var out []results.Experiment
	for _, p := range parts {
		if p.ablation && (optIn || !p.optIn) {
			out = append(out, p.name)
		}
	}
	return out
}

// selects reports whether the configuration runs any of the part's steps.
func (c Config) selects(p part) bool {
	// --pipeline runs paper §4's pipeline alone; it runs only with it.
	if c.Pipeline || p.name == pipelineExp {
		return c.Pipeline && p.name == pipelineExp
	}
	if p.ablation {
		return c.hasSystem(results.Kafka) && slices.Contains(c.Ablations, p.name)
	}
	return true
}

// plan lists every step of the invocation, part after part. Each system runs
// alone on the machine: a peer is started just before its tests and stopped
// right after, each broker just before the runs that use it.
func plan(l *lab) []step {
	var p []step
	for _, pt := range parts {
		if l.cfg.selects(pt) {
			p = append(p, pt.steps(l)...)
		}
	}
	return p
}

// sections are the parts' sections of §5's report.md, in order. The
// pipeline of §4 runs alone and writes a report of its own
// (writePipelineReport).
func sections() []report.Section {
	out := make([]report.Section, 0, len(parts))
	for _, p := range parts {
		if p.name != pipelineExp {
			out = append(out, p.section)
		}
	}
	return out
}
