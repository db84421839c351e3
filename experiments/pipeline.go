package experiments

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/netdb11/kafka/experiments/figures"
	"github.com/netdb11/kafka/experiments/pipeline"
	"github.com/netdb11/kafka/experiments/report"
	"github.com/netdb11/kafka/experiments/results"
)

// pipelineExp names the part.
const pipelineExp results.Experiment = "pipeline"

// pipelinePart is paper §4's deployment (experiments/pipeline): front-end
// producers in a live datacenter, kafka-mirror pulling into the analysis
// datacenter, a consumer there, the audit over every window; then the same
// with the mirror SIGKILLed midway. It runs alone, with --pipeline.
var pipelinePart = part{
	name:  pipelineExp,
	steps: pipelineSteps,
	binaries: func(Config) []string {
		return []string{"kafka-mirror", "kafka-audit", "kafka-audit-producer", "kafka-console-producer"}
	},
	section: report.Section{
		Has: func(set *results.Set) bool { return set.Pipeline != nil },
		Figures: []report.Figure{{File: pipeline.FigureFile, Title: "Two datacenters: end-to-end latency over time and where it goes",
			Build: func(set *results.Set) figures.Figure { return pipeline.Figure(set.Pipeline) }}},
		Write: func(w report.Printf, set *results.Set, _ report.Context, figs []report.Fig) {
			var files []string
			for _, f := range figs {
				files = append(files, f.File)
			}
			pipeline.Write(w, set.Pipeline, files)
		},
	},
}

func pipelineSteps(l *lab) []step {
	return []step{{label: "pipeline: two datacenters, steady, then the mirror SIGKILLed", system: results.Kafka, run: func(ctx context.Context) error {
		cfg := pipeline.DefaultConfig()
		cfg.Bin = l.cfg.BinDir
		cfg.Dir = filepath.Join(l.work, "pipeline")
		cfg.Logs = filepath.Join(l.logs, "pipeline")
		cfg.Script = filepath.Join(l.cfg.RepoDir, "scripts", "testbed.sh")
		cfg.Logger = l.log
		if l.cfg.PipelinePhase > 0 {
			cfg.Phase = l.cfg.PipelinePhase
			// The kill lands at about 40% of the phase, the restart 15% later.
			cfg.KillAt, cfg.Downtime = cfg.Phase*2/5, cfg.Phase*3/20
		}
		res, err := pipeline.Run(ctx, cfg)
		if res != nil {
			l.rec.set.Pipeline = res
		}
		return err
	}}}
}

// writePipelineReport writes report.md of a --pipeline run: the machine,
// then the pipeline's section and figure (the §5 report has nothing to say).
func writePipelineReport(dir string, set *results.Set) error {
	secs := []report.Section{pipelinePart.section}
	figs, ferr := report.WriteFigures(dir, set, secs)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Kafka (NetDB'11) §4 reproduced: two datacenters, the mirror and the audit\n\n")
	w("Generated %s by `kafka-experiments --pipeline`. Each process's output is in `logs/pipeline/`; the record in `runs.json` (`pipeline`).\n\n",
		set.Finished.UTC().Format(time.RFC3339))
	m := set.Machine
	w("- **This machine:** %s, %d cores, shared with other jobs: each phase's load average (at its start and end) is in its row below.\n\n", m.CPUModel, m.Cores)
	if set.Pipeline == nil {
		w("The pipeline did not run.\n")
	} else {
		var files []report.Fig
		if len(figs) > 0 {
			files = figs[0]
		}
		secs[0].Write(report.Printf(w), set, report.Context{}, files)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(b.String()), 0o644); err != nil {
		return errors.Join(ferr, err)
	}
	return ferr
}
