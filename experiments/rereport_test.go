package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/experiments/results"
)

// A redrawn report keeps the departures from 0.7's defaults recorded in the
// runs' configurations.
func TestRereportKeepsSettings(t *testing.T) {
	dir := t.TempDir()
	set := &results.Set{Config: DefaultConfig(Quick).Config, Testbed: "paper: test", Runs: []results.Run{{
		ID:    "kafka/main/batch=50/produce/rep=1",
		Key:   results.Key{System: results.Kafka, Experiment: results.Main, Variant: results.VariantBatch(50), Phase: results.Produce},
		Param: 50, Rep: 1,
		Config: map[string]string{"socket_buffers": autotunedSockets},
		Result: perf.NewResult(1000, 200_000, 1, nil),
	}}}
	if err := set.WriteJSON(filepath.Join(dir, "runs.json")); err != nil {
		t.Fatal(err)
	}
	if err := Rereport(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "**Departure from Kafka 0.7's defaults:** " + autotunedSockets; strings.Count(string(md), want) != 1 {
		t.Errorf("report.md lacks (once) %q", want)
	}
}
