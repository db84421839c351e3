package experiments

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/netdb11/kafka/experiments/machine"
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
	var m machine.Machine
	var cfg struct {
		Mode    string `json:"mode"`
		Testbed string `json:"testbed"`
	}
	if err := remarshal(set.Machine, &m); err != nil {
		return fmt.Errorf("experiments: machine in runs.json: %w", err)
	}
	if err := remarshal(set.Config, &cfg); err != nil {
		return fmt.Errorf("experiments: config in runs.json: %w", err)
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
	return report.Write(out, set, report.Context{Machine: m, Mode: cfg.Mode, TestbedKind: cfg.Testbed,
		Testbed: set.Testbed, Settings: settings, Failures: failures, Now: set.Finished})
}

func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}
