package results

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/netdb11/kafka/experiments/perf"
)

func sample() *Set {
	mk := func(sys, exp, variant, phase string, param float64, rate float64, errText string) Run {
		return Run{ID: sys + "/" + variant, System: sys, Experiment: exp, Variant: variant, Param: param, Phase: phase, Rep: 1,
			Config:  map[string]string{"batch_size": "50", "note": "quotes \" and, commas"},
			Result:  perf.NewResult(int64(rate), int64(rate)*200, 1, []perf.Sample{{T: 0.5, Messages: int64(rate / 2)}}),
			Started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Error: errText}
	}
	return &Set{
		Machine: map[string]any{"cores": 2.0}, Config: map[string]any{"mode": "quick"}, Testbed: "loopback",
		Runs: []Run{
			mk(Kafka, Batch, VariantBatch(50), Produce, 50, 1e6, ""),
			mk(Kafka, Batch, VariantBatch(1), Produce, 1, 1e5, ""),
			mk(Kafka, Batch, VariantBatch(10), Produce, 10, 0, "broker crashed"),
			mk(ActiveMQ, Main, VariantTx(50), Produce, 50, 1e4, ""),
		},
	}
}

func TestJSONRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.json")
	s := sample()
	if err := s.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Runs, s.Runs) || back.Testbed != "loopback" {
		t.Errorf("round trip changed the runs:\n got %+v\nwant %+v", back.Runs, s.Runs)
	}
	if _, err := ReadJSON(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("reading a missing file succeeded")
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJSON(path); err == nil {
		t.Error("reading a corrupt file succeeded")
	}
}

func TestCSV(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.csv")
	s := sample()
	if err := s.WriteCSV(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+len(s.Runs) || !reflect.DeepEqual(rows[0], CSVHeader) {
		t.Fatalf("%d rows, header %v", len(rows), rows[0])
	}
	col := map[string]int{}
	for i, h := range CSVHeader {
		col[h] = i
	}
	if rows[1][col["msgs_per_sec"]] != "1e+06" || rows[1][col["variant"]] != "batch=50" || rows[3][col["error"]] != "broker crashed" {
		t.Errorf("row 1 = %v, row 3 = %v", rows[1], rows[3])
	}
	var cfg map[string]string
	if err := json.Unmarshal([]byte(rows[1][col["config"]]), &cfg); err != nil || cfg["note"] != `quotes " and, commas` {
		t.Errorf("config column %q: %v", rows[1][col["config"]], err)
	}
}

func TestSelectAndSweeps(t *testing.T) {
	s := sample()
	if got := s.Select(Kafka, Batch, "", Produce); len(got) != 2 {
		t.Errorf("Select kept %d good Kafka batch runs, want 2 (the failed one excluded)", len(got))
	}
	if got := s.Select("", "", VariantTx(50), ""); len(got) != 1 || got[0].System != ActiveMQ {
		t.Errorf("Select by variant = %v", got)
	}
	runs := s.Select(Kafka, "", "", "")
	if got := Params(runs); !reflect.DeepEqual(got, []float64{1, 50}) {
		t.Errorf("Params = %v", got)
	}
	if got := Variants(s.Runs); !reflect.DeepEqual(got, []string{"batch=50", "batch=1", "batch=10", "transactions of 50 messages"}) {
		t.Errorf("Variants = %v", got)
	}
	if !IsTx(VariantTx(5)) || IsTx(VariantOnePerSend) {
		t.Error("IsTx")
	}
}
