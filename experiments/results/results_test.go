package results

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/experiments/machine"
)

// batch is an experiment of the sample set.
const batch Experiment = "batch"

func sample() *Set {
	mk := func(sys System, exp Experiment, variant Variant, phase Phase, param float64, rate float64, errText string) Run {
		return Run{ID: string(sys) + "/" + variant.String(), Key: Key{System: sys, Experiment: exp, Variant: variant, Phase: phase}, Param: param, Rep: 1,
			Config:  map[string]string{"batch_size": "50", "note": "quotes \" and, commas"},
			Result:  perf.NewResult(int64(rate), int64(rate)*200, 1, []perf.Sample{{T: 0.5, Messages: int64(rate / 2)}}),
			Started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Error: errText}
	}
	return &Set{
		Machine: machine.Machine{Cores: 2}, Config: Config{Mode: "quick", Systems: []System{Kafka}}, Testbed: "loopback",
		Runs: []Run{
			mk(Kafka, batch, VariantBatch(50), Produce, 50, 1e6, ""),
			mk(Kafka, batch, VariantBatch(1), Produce, 1, 1e5, ""),
			mk(Kafka, batch, VariantBatch(10), Produce, 10, 0, "broker crashed"),
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
	if !reflect.DeepEqual(back.Runs, s.Runs) || back.Testbed != "loopback" || !reflect.DeepEqual(back.Machine, s.Machine) ||
		!reflect.DeepEqual(back.Config, s.Config) {
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
	if got := s.Select(Key{System: Kafka, Experiment: batch, Phase: Produce}); len(got) != 2 {
		t.Errorf("Select kept %d good Kafka batch runs, want 2 (the failed one excluded)", len(got))
	}
	if got := s.Select(Key{Variant: VariantTx(50)}); len(got) != 1 || got[0].System != ActiveMQ {
		t.Errorf("Select by variant = %v", got)
	}
	runs := s.Select(Key{System: Kafka})
	if got := Params(runs); !reflect.DeepEqual(got, []float64{1, 50}) {
		t.Errorf("Params = %v", got)
	}
	if got := Variants(s.Runs); !reflect.DeepEqual(got, []Variant{VariantBatch(50), VariantBatch(1), VariantBatch(10), VariantTx(50)}) {
		t.Errorf("Variants = %v", got)
	}
	if VariantTx(5).Setting != Transactions || VariantOnePerSend.Setting == Transactions {
		t.Error("the transaction variant is not told apart by its setting")
	}
}

// A runs.json written before Machine, Config and the run's key were typed
// (testdata/runs-v1.json, runs from paper/results) still loads into the typed
// fields, every run's key gives back its recorded ID, and writing the set
// again gives the same JSON values.
func TestReadEarlierVersion(t *testing.T) {
	const path = "testdata/runs-v1.json"
	s, err := ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Machine.Cores != 2 || s.Machine.DiskWriteMBps <= 0 || s.Config.Mode != "quick" || s.Config.Testbed != "loopback" ||
		!reflect.DeepEqual(s.Config.Systems, []System{Kafka, ActiveMQ, RabbitMQ}) || s.Config.TxSize != 50 || s.Config.PeerTimeCap != 5*time.Second {
		t.Errorf("machine %+v, config %+v", s.Machine, s.Config)
	}
	tx := 0
	for _, r := range s.Runs {
		if got := r.Key.ID(r.Rep); got != r.ID {
			t.Errorf("key %+v gives ID %q, recorded %q", r.Key, got, r.ID)
		}
		if r.Variant.Setting == Transactions {
			tx++
			if r.Variant != VariantTx(50) || r.System == Kafka {
				t.Errorf("transaction run %s: variant %+v", r.ID, r.Variant)
			}
		}
	}
	if tx == 0 {
		t.Error("no transaction run in the fixture")
	}
	out := filepath.Join(t.TempDir(), "runs.json")
	if err := s.WriteJSON(out); err != nil {
		t.Fatal(err)
	}
	generic := func(path string) any {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if old, again := generic(path), generic(out); !reflect.DeepEqual(old, again) {
		t.Errorf("rewriting %s changed its JSON values", path)
	}
}

// ParseVariant reads back what String writes: parsing is idempotent through
// String, and every variant the experiments make survives the round trip.
func TestVariantWords(t *testing.T) {
	for _, v := range []Variant{VariantOnePerSend, VariantConsumer, VariantBatch(50), VariantTx(50), VariantBrokers(3),
		Setting("sendfile", "false"), Setting("log.flush.interval", "100"), Setting("log", "100MiB"), Setting("codec", "gzip")} {
		if got := ParseVariant(v.String()); got != v {
			t.Errorf("ParseVariant(%q) = %+v, want %+v", v.String(), got, v)
		}
	}
	if got := VariantTx(50).String(); got != "transactions of 50 messages" {
		t.Errorf("VariantTx(50) = %q", got)
	}
	if got := (Key{Kafka, Main, VariantTx(5), Produce}).ID(2); got != "kafka/main/tx=5/produce/rep=2" {
		t.Errorf("ID = %q", got)
	}
}

func FuzzParseVariant(f *testing.F) {
	for _, s := range []string{"batch=50", "transactions of 50 messages", "one message per send", "a=b=c", "transactions", "=x", "x="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := ParseVariant(s)
		if again := ParseVariant(v.String()); again != v {
			t.Errorf("ParseVariant(%q) = %+v, but its words %q parse to %+v", s, v, v.String(), again)
		}
	})
}
