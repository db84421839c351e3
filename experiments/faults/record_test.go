package faults

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/experiments/faults/check"
)

// sampleSuite is a finished suite without running anything: a cell whose
// second trial lost a write, a cell of valid trials, and a cell whose only
// trial was a harness error.
func sampleSuite(out string) *Suite {
	t0 := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	evs := history(t0)
	valid := check.Check(evs)
	// The same history with its last read gone: one acknowledged write lost.
	var lossy []check.Event
	last := -1
	for i, e := range evs {
		if e.Type == check.TypeRead {
			last = i
		}
	}
	lossy = append(append(lossy, evs[:last]...), evs[last+1:]...)
	lost := check.Check(lossy)
	if lost.Valid() {
		panic("the lossy history checks valid")
	}
	res := func(n, a string, seed int64, r *check.Result, outage, refusing time.Duration) *TrialResult {
		return &TrialResult{Config: TrialConfig{Seed: seed, Nemesis: n, Setup: a}, Check: r, Outage: outage, Refusing: refusing}
	}
	return &Suite{
		Config:  SuiteConfig{Out: out, Trials: 3, Seed: 4},
		Started: t0,
		Cells: []*Cell{
			{Nemesis: StallKill, Setup: "acks1", Trials: []*TrialResult{
				res(StallKill, "acks1", 4, valid, 2345*time.Millisecond, 0),
				res(StallKill, "acks1", 5, lost, 3*time.Second, 0),
				res(StallKill, "acks1", 6, lost, 1049*time.Millisecond, 0),
			}},
			{Nemesis: IsolateBrokers, Setup: "safe", Trials: []*TrialResult{
				res(IsolateBrokers, "safe", 4, valid, 7*time.Second, 4951*time.Millisecond),
			}},
			{Nemesis: Kill, Setup: AckAppend, Errors: []string{"seed 4 kill append: harness error: the cluster did not start"}},
		},
	}
}

func TestCellRecord(t *testing.T) {
	s := sampleSuite("/out")
	recs := s.Records()
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if r.Trials != 3 || r.WithAnomalies != 2 || r.Counts[check.Lost] != 2 || r.Seed != 4 ||
		r.Outage != [2]time.Duration{2345 * time.Millisecond, 3 * time.Second} || len(r.Verdicts) != 3 ||
		r.Timeline != "trials/stall-kill-acks1-seed-4/timeline.png" ||
		!strings.HasPrefix(r.Finding, "`acks1` under `stall-kill`, seed 5: 1 lost-write of ") {
		t.Errorf("record %+v", r)
	}
	if e := recs[2]; e.Trials != 0 || len(e.Errors) != 1 || e.Timeline != "" {
		t.Errorf("record of a failed cell %+v", e)
	}
	if got, want := s.Verdict(), "faults: 4 trials, 2 with anomalies, 0 invalid, 1 harness errors; lost-write 2;"; !strings.HasPrefix(got, want) {
		t.Errorf("verdict %q, want %q...", got, want)
	}
	if s.Valid() {
		t.Error("a suite with losses is valid")
	}
}

// TestParseReportRoundTrip: a report read back and rendered again is the
// same page, cells without trials and the "-" of their durations included.
func TestParseReportRoundTrip(t *testing.T) {
	s := sampleSuite("/out")
	page := s.Report()
	recs, started, err := ParseReport(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if !started.Equal(s.Started) || len(recs) != 3 {
		t.Fatalf("started %v, %d records", started, len(recs))
	}
	again := &Suite{Config: s.Config, Started: started, Recorded: recs}
	if got := again.Report(); got != page {
		t.Errorf("the page read back renders differently:\n%s\nwant:\n%s", got, page)
	}
	if again.Verdict() != s.Verdict() {
		t.Errorf("verdict %q, want %q", again.Verdict(), s.Verdict())
	}
	if r := recs[0]; r.Outage != [2]time.Duration{2300 * time.Millisecond, 3 * time.Second} || r.Refusing != [2]time.Duration{} {
		t.Errorf("durations read back %v %v", r.Outage, r.Refusing)
	}
	// The method names the batches' interval where it says "every" (it
	// once said "every of 1 byte to 10 KiB ...; payloads 20ms").
	tc := s.Config.Trial
	tc.defaults()
	if want := fmt.Sprintf("batches of %d messages every %v (", tc.Batch, tc.Interval); !strings.Contains(page, want) {
		t.Errorf("the method does not say %q", want)
	}
}

func TestParseReportRefuses(t *testing.T) {
	page := sampleSuite("/out").Report()
	row := "| isolate-brokers | safe | 1 | 0 | 0 |"
	if !strings.Contains(page, row) {
		t.Fatalf("the page lacks %q", row)
	}
	for name, bad := range map[string]string{
		"nothing":          "",
		"not a report":     "# something else\n\nhello\n",
		"a column short":   strings.Replace(page, row, "| isolate-brokers | safe | 1 |", 1),
		"a count":          strings.Replace(page, row, "| isolate-brokers | safe | x | 0 |", 1),
		"trials vs lines":  strings.Replace(page, row, "| isolate-brokers | safe | 2 | 0 |", 1),
		"a duration":       strings.Replace(page, "7.0 s (7.0 s)", "7 s", 1),
		"an unknown cell":  strings.Replace(page, "seed 4 isolate-brokers safe:", "seed 4 isolate-brokers acks1:", 1),
		"a finding's cell": strings.Replace(page, "- `acks1` under `stall-kill`", "- `acks1` under `kill`", 1),
		"another header":   strings.Replace(page, "| vanished (unacked) |", "| vanished |", 1),
		"a cell twice":     strings.Replace(page, row, row+" 0 | 0 | 0 | 0 | 0 | 0 | 0 | 7.0 s (7.0 s) | 5.0 s (5.0 s) |\n"+row, 1),
		"a run start":      strings.Replace(page, "Run: 2026-12-01 07:00 UTC", "Run: yesterday", 1),
	} {
		if bad == page {
			t.Errorf("%s: the replacement did not apply", name)
			continue
		}
		if _, _, err := ParseReport(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestRereportMerge: a directory with one history and another run's
// recorded cells make one report; once the history is gone, the cell it
// made is kept as recorded and the page does not change; a cell merged
// twice is refused, as is a directory with nothing to merge; and a run
// known only by its report.md (made before cells.json) merges too.
func TestRereportMerge(t *testing.T) {
	out, other, old := t.TempDir(), t.TempDir(), t.TempDir()
	dir := TrialDir(out, Kill, "safe", 5)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hist := filepath.Join(dir, "history.jsonl")
	if err := writeHistory(hist, history(time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC))); err != nil {
		t.Fatal(err)
	}
	// The other run: two cells recorded in cells.json, with a timeline.
	o := sampleSuite(other)
	o.Cells = o.Cells[:2]
	if err := writeRecords(other, o.Started, o.Records()); err != nil {
		t.Fatal(err)
	}
	fig := []byte("\x89PNG not really")
	for _, c := range []string{"stall-kill-acks1-seed-4", "isolate-brokers-safe-seed-4"} {
		if err := copyFileBytes(filepath.Join(other, "trials", c, "timeline.png"), fig); err != nil {
			t.Fatal(err)
		}
	}
	// The old run: one cell known only by its report.md.
	p := sampleSuite(old)
	p.Cells = p.Cells[2:]
	if err := os.WriteFile(filepath.Join(old, "report.md"), []byte(p.Report()), 0o644); err != nil {
		t.Fatal(err)
	}

	s, err := Rereport(out, other, old)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Verdict(), "faults: 5 trials, 2 with anomalies, 0 invalid, 1 harness errors; lost-write 2;"; !strings.HasPrefix(got, want) {
		t.Errorf("merged verdict %q, want %q...", got, want)
	}
	page, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| kill | safe | 1 | 0 | 0 | 21 |", "| stall-kill | acks1 | 3 | 0 | 2 |", "| isolate-brokers | safe | 1 | 0 | 0 |",
		"| kill | append | 0 | 0 | 0 | 0 |", "seed 5 kill safe: VALID", "seed 6 stall-kill acks1: ANOMALIES", "harness error: the cluster did not start",
		"Run: 2026-12-01 07:00 UTC (cells merged from runs begun 2026-12-01 07:00 UTC, ", "), up to 3 trials per cell, seeds from 4."} {
		if !strings.Contains(string(page), want) {
			t.Errorf("merged report lacks %q", want)
		}
	}
	// Sorted by configuration, then nemesis: append, safe (kill before
	// isolate-brokers), acks1.
	if i, j, k := strings.Index(string(page), "| kill | append"), strings.Index(string(page), "| isolate-brokers | safe"), strings.Index(string(page), "| stall-kill | acks1"); !(i < j && j < k) {
		t.Errorf("rows out of order: %d %d %d", i, j, k)
	}
	if b, err := os.ReadFile(filepath.Join(out, "trials", "stall-kill-acks1-seed-4", "timeline.png")); err != nil || string(b) != string(fig) {
		t.Errorf("merged timeline: %q, %v", b, err)
	}
	var f recordFile
	if b, err := os.ReadFile(filepath.Join(out, cellsFile)); err != nil || json.Unmarshal(b, &f) != nil || len(f.Cells) != 4 {
		t.Fatalf("cells.json: %d cells, %v", len(f.Cells), err)
	}

	// The history gone, the page stays.
	if err := os.Remove(hist); err != nil {
		t.Fatal(err)
	}
	if _, err := Rereport(out); err != nil {
		t.Fatal(err)
	}
	if again, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || string(again) != string(page) {
		t.Errorf("rebuilt from cells.json alone, the page changed (%v):\n%s", err, again)
	}
	before := string(page)
	if _, err := Rereport(out, other); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("a cell merged twice: %v", err)
	}
	// Replaced: the other run's stall-kill cell rerun with one trial.
	re := t.TempDir()
	q := sampleSuite(re)
	q.Cells = q.Cells[:1]
	q.Cells[0].Trials = q.Cells[0].Trials[:1]
	if err := writeRecords(re, q.Started, q.Records()); err != nil {
		t.Fatal(err)
	}
	if err := copyFileBytes(filepath.Join(re, "trials", "stall-kill-acks1-seed-4", "timeline.png"), []byte("new")); err != nil {
		t.Fatal(err)
	}
	if s, err := RereportReplace(out, re); err != nil || !strings.HasPrefix(s.Verdict(), "faults: 3 trials, 0 with anomalies, 0 invalid, 1 harness errors; lost-write 0;") {
		t.Errorf("replaced: %v, %v", s, err)
	} else if b, _ := os.ReadFile(filepath.Join(out, "trials", "stall-kill-acks1-seed-4", "timeline.png")); string(b) != "new" {
		t.Errorf("the replaced cell's timeline is %q", b)
	}
	before = string(func() []byte { b, _ := os.ReadFile(filepath.Join(out, "report.md")); return b }())
	if _, err := Rereport(out, t.TempDir()); err == nil {
		t.Error("merging a directory with no cells: no error")
	}
	if after, _ := os.ReadFile(filepath.Join(out, "report.md")); string(after) != before {
		t.Error("a refused merge rewrote the report")
	}
	zero := map[string]int{}
	for _, k := range check.Kinds {
		zero[k] = 0
	}
	if !reflect.DeepEqual(s.Records()[0].Counts, zero) {
		t.Errorf("counts of a valid history: %v", s.Records()[0].Counts)
	}
}

func copyFileBytes(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// FuzzParseReport: any input is read or refused, never a panic, and what
// it reads renders to a page that reads back the same.
func FuzzParseReport(f *testing.F) {
	f.Add(sampleSuite("/out").Report())
	f.Add("## Matrix\n\n" + matrixHeader() + "\n| kill | safe | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | - | - |\n")
	f.Add("## Matrix\n| a | b | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 1.0 s (2.0 s) | 0.0 s (0.0 s) |\n## Every trial\n```\nseed 1 a b: VALID\n```\n")
	f.Add("Run: 2026-12-01 10:21 UTC.\n## Findings\n- `b` under `a`, seed 1: x\n")
	f.Fuzz(func(t *testing.T, page string) {
		recs, started, err := ParseReport(strings.NewReader(page))
		if err != nil {
			return
		}
		again := (&Suite{Config: SuiteConfig{Out: "/out"}, Started: started, Recorded: recs}).Report()
		recs2, _, err := ParseReport(strings.NewReader(again))
		if err != nil {
			t.Fatalf("a page rendered from what was read is refused: %v\n%s", err, again)
		}
		if !reflect.DeepEqual(recs, recs2) {
			t.Fatalf("read back differently:\n%+v\n%+v", recs, recs2)
		}
	})
}

// TestCellRecordInvalid: a trial whose final reads did not finish is
// counted apart (invalid), never valid, and its counts stay out of the
// cell's anomaly columns; the suite is not valid.
func TestCellRecordInvalid(t *testing.T) {
	evs := history(time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC))
	var cut []check.Event
	for _, e := range evs {
		if e.Type == check.TypeRead && e.Seq == 3 {
			continue // a loss, besides
		}
		cut = append(cut, e)
	}
	cut = append(cut, check.Event{Type: check.TypeInvalid, Error: "final1 did not finish reading t-0"})
	r := check.Check(cut)
	if r.Status() != check.StatusInvalid {
		t.Fatalf("status %s", r.Status())
	}
	s := &Suite{Config: SuiteConfig{Out: "/out", Trials: 1, Seed: 9}, Cells: []*Cell{{Nemesis: Compound, Setup: "safe",
		Trials: []*TrialResult{{Config: TrialConfig{Seed: 9, Nemesis: Compound, Setup: "safe"}, Check: r}}}}}
	rec := s.Records()[0]
	if rec.Trials != 1 || rec.Invalid != 1 || rec.WithAnomalies != 0 || rec.Counts[check.Lost] != 0 || rec.Acknowledged != 0 || rec.Finding != "" {
		t.Errorf("record %+v", rec)
	}
	if s.Valid() || !strings.HasPrefix(s.Verdict(), "faults: 1 trials, 0 with anomalies, 1 invalid, 0 harness errors;") {
		t.Errorf("valid %v, verdict %q", s.Valid(), s.Verdict())
	}
	if page := s.Report(); !strings.Contains(page, "| compound | safe | 1 | 1 | 0 | 0 |") || !strings.Contains(page, "seed 9 compound safe: INVALID (final1 did not finish reading t-0)") {
		t.Errorf("report:\n%s", page)
	}
}

// TestParseLegacyReport: the committed matrix, written before Jepsen's
// names and the invalid column, reads back with today's names.
func TestParseLegacyReport(t *testing.T) {
	f, err := os.Open("../../paper/results/faults/report.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, _, err := ParseReport(f)
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, r := range recs {
		if _, old := r.Counts["lost"]; old {
			t.Fatalf("cell %s %s keeps the old name: %v", r.Nemesis, r.Setup, r.Counts)
		}
		lost += r.Counts[check.Lost]
	}
	if len(recs) < 100 || lost == 0 {
		t.Errorf("%d cells, %d lost writes", len(recs), lost)
	}
}

// TestParseLogKindsReport: a report written before the consumer columns
// (check.LogKinds, with the invalid and not-promised columns) reads back,
// its cells' consumer counts absent.
func TestParseLogKindsReport(t *testing.T) {
	page := sampleSuite("/out").Report()
	var lines []string
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "|") {
			f := strings.Split(l, "|")
			// | nemesis | configuration | trials | invalid | with | acked | 6 log kinds | 4 consumer kinds | invariant | ...
			l = strings.Join(append(f[:13:13], f[18:]...), "|")
		}
		lines = append(lines, l)
	}
	recs, _, err := ParseReport(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].Counts[check.Lost] != 2 {
		t.Fatalf("records %+v", recs)
	}
	if _, ok := recs[0].Counts[check.PollSkip]; ok {
		t.Errorf("a consumer count read from a report without it: %v", recs[0].Counts)
	}
}

// TestRetriedDuplicateCell: a duplicate a producer's retry explains shows
// in the duplicate column as "1 (1 retried)" and in the not promised
// column, leaves the cell without anomalies and the suite valid, and reads
// back; before, it counted as an anomaly (every safe cell of make faults
// was "with anomalies" for its retries).
func TestRetriedDuplicateCell(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	evs := history(t0)
	for i := range evs {
		if evs[i].Type == check.TypeSend && evs[i].Seq == 3 {
			evs[i].Attempts = 2
		}
	}
	evs = append(evs, check.ReadEvent("r", check.TP{Topic: "t"}, 100000, check.Payload(check.ID{Producer: 1, Seq: 3}, 20)))
	r := check.Check(evs)
	s := &Suite{Config: SuiteConfig{Out: "/out", Trials: 1, Seed: 5}, Started: t0, Cells: []*Cell{{Nemesis: Kill, Setup: "safe",
		Trials: []*TrialResult{{Config: TrialConfig{Seed: 5, Nemesis: Kill, Setup: "safe"}, Check: r}}}}}
	rec := s.Records()[0]
	if rec.WithAnomalies != 0 || rec.Retried != 1 || rec.Unpromised != 1 || rec.Counts[check.Duplicate] != 0 || !s.Valid() {
		t.Fatalf("record %+v", rec)
	}
	page := s.Report()
	if !strings.Contains(page, "| 0 | 0 | 1 (1 retried) | 0 |") || !strings.Contains(s.Verdict(), "duplicate 1 (1 retried); ") {
		t.Errorf("verdict %q, page:\n%s", s.Verdict(), page)
	}
	recs, started, err := ParseReport(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	again := &Suite{Config: s.Config, Started: started, Recorded: recs}
	if got := again.Report(); got != page || recs[0].Retried != 1 || recs[0].Counts[check.Duplicate] != 0 {
		t.Errorf("read back %+v, renders:\n%s", recs[0], got)
	}
	for _, bad := range []string{"1 (2 retried)", "2 (1 retried", "0 (0 retried)", "x (1 retried)", "1 (-1 retried)"} {
		if _, _, err := parseDuplicateCell(bad); err == nil {
			t.Errorf("%q read", bad)
		}
	}
}

// TestMatrixPresetsName runnable cells: every cell of every --matrix preset
// is a known nemesis against a known configuration it applies to, and the
// soak strikes the configuration that promises no loss with compound
// schedules only.
func TestMatrixPresetsName(t *testing.T) {
	for name, pairs := range Matrices {
		ps := pairs()
		if len(ps) == 0 {
			t.Errorf("--matrix=%s has no cells", name)
		}
		for _, p := range ps {
			n, a := p[0], p[1]
			if !slices.Contains(Nemeses, n) || Setups[a].Name == "" || !applies(a, n) {
				t.Errorf("--matrix=%s: cell %s x %s is not a runnable cell", name, n, a)
			}
		}
	}
	if s := Matrices["soak"](); len(s) != 1 || s[0] != [2]string{Compound, "safe"} {
		t.Errorf("--matrix=soak is %v, want compound x safe", s)
	}
}

// TestShardSplitsTheMatrix: the shards of a matrix are disjoint, together
// are the matrix, differ in size by at most one cell, and each holds cells
// of several configurations; a bad spec is refused.
func TestShardSplitsTheMatrix(t *testing.T) {
	full := FullPairs()
	const n = 3
	seen := map[[2]string]int{}
	for k := 1; k <= n; k++ {
		part, err := Shard(full, fmt.Sprintf("%d/%d", k, n))
		if err != nil {
			t.Fatal(err)
		}
		if d := len(part) - len(full)/n; d < 0 || d > 1 {
			t.Errorf("shard %d/%d has %d of %d cells", k, n, len(part), len(full))
		}
		configs := map[string]bool{}
		for _, p := range part {
			seen[p]++
			configs[p[1]] = true
		}
		if len(configs) < 2 {
			t.Errorf("shard %d/%d holds only the configurations %v", k, n, configs)
		}
	}
	if len(seen) != len(full) {
		t.Errorf("the shards hold %d distinct cells, the matrix %d", len(seen), len(full))
	}
	for p, c := range seen {
		if c != 1 {
			t.Errorf("cell %v in %d shards", p, c)
		}
	}
	for _, bad := range []string{"", "0/3", "4/3", "1/0", "a/b", "1/3x", "1"} {
		if _, err := Shard(full, bad); err == nil {
			t.Errorf("Shard(%q) accepted", bad)
		}
	}
}

// TestReportDescribesEveryNemesis: the report's method section says what
// every nemesis and configuration does; a new one without words would print
// an empty line there (as the issue-23 nemeses did until the full matrix's
// rerun showed it).
func TestReportDescribesEveryNemesis(t *testing.T) {
	for _, n := range Nemeses {
		if describeNemesis[n] == "" {
			t.Errorf("nemesis %q has no description for the report", n)
		}
	}
	for name := range Setups {
		if describeSetup[name] == "" {
			t.Errorf("configuration %q has no description for the report", name)
		}
	}
}

func TestMergedRuns(t *testing.T) {
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.DateTime, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		runs []string
		want string
	}{
		{nil, ""},
		{[]string{"2026-12-05 03:15:02"}, ""},
		{[]string{"2026-12-05 03:15:02", "2026-12-05 03:15:02"}, ""},
		{[]string{"2026-12-05 03:16:00", "2026-12-05 03:15:02"}, " (cells merged from runs begun 2026-12-05 03:15 UTC, 2026-12-05 03:16 UTC)"},
		{[]string{"2026-12-05 03:18:00", "2026-12-04 22:15:00", "2026-12-05 03:15:00", "2026-12-05 03:16:00", "2026-12-04 23:00:00"},
			" (cells merged from 5 runs begun 2026-12-04 22:15 UTC to 2026-12-05 03:18 UTC)"},
		// Runs begun side by side share a minute and are five runs still.
		{[]string{"2026-12-05 03:15:01", "2026-12-05 03:15:03", "2026-12-05 03:15:05", "2026-12-05 03:15:07", "2026-12-05 03:15:09", "2026-12-05 03:15:09"},
			" (cells merged from 5 runs begun 2026-12-05 03:15 UTC to 2026-12-05 03:15 UTC)"},
	} {
		var starts []time.Time
		for _, s := range c.runs {
			starts = append(starts, at(s))
		}
		if got := mergedRuns(starts); got != c.want {
			t.Errorf("mergedRuns(%q) = %q, want %q", c.runs, got, c.want)
		}
	}
}
