package experiments

import (
	"path/filepath"
	"slices"

	"github.com/netdb11/kafka/experiments/report"
	"github.com/netdb11/kafka/experiments/results"
)

// Rereport redraws the figures and rewrites report.md from out/runs.json, for
// example after a change to the report's code, without rerunning anything.
func Rereport(out string) error {
	set, err := results.ReadJSON(filepath.Join(out, "runs.json"))
	if err != nil {
		return err
	}
	if set.Config.Pipeline {
		return writePipelineReport(out, set)
	}
	var failures, settings []string
	for _, r := range set.Runs {
		if r.Error != "" {
			failures = append(failures, r.ID+": "+r.Error)
		}
		// The departures from 0.7's defaults are in the runs they affected.
		if st := r.Config["socket_buffers"]; st != "" && !slices.Contains(settings, st) {
			settings = append(settings, st)
		}
	}
	return report.Write(out, set, report.Context{Machine: set.Machine, LimitsAfter: set.LimitsAfter, Mode: set.Config.Mode, TestbedKind: set.Config.Testbed,
		Testbed: set.Testbed, Settings: settings, Failures: failures, Now: set.Finished}, sections())
}
