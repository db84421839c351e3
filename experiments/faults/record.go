package faults

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/experiments/faults/check"
)

// CellRecord is what the report shows of one cell: its row of the matrix,
// its finding, its timeline and every trial's verdict line. A run keeps the
// records in OUT/cells.json beside report.md, so that the report can be
// rebuilt, and merged with another run's (Rereport), once the histories
// are gone: a history is about 6.5 MB, too much to commit, a record a few
// hundred bytes per trial.
type CellRecord struct {
	Nemesis, Setup string
	Started        time.Time // when the run that made it began
	Seed           int64     // the lowest seed of its trials
	Trials         int       // trials that came to a verdict
	// Invalid counts the trials that did not finish (check.StatusInvalid):
	// their outcome is unknown, and nothing else in the record counts them
	// but Trials and Verdicts.
	Invalid       int `json:",omitempty"`
	WithAnomalies int // finished trials with anomalies
	Acknowledged  int
	Vanished      int
	Counts        map[string]int // by check.Kinds, over the finished trials
	// Unpromised counts the anomalies the configuration does not promise
	// to avoid (a power loss everywhere, a retry's duplicate:
	// check.Anomaly.Unpromised).
	Unpromised int `json:",omitempty"`
	// Retried counts the duplicates a producer's retries explain
	// (check.Result.Retried): among Unpromised, not in Counts, and shown
	// in the duplicate column beside the others (duplicateCell).
	Retried int `json:",omitempty"`
	// Outage and Refusing are the median and the largest, over the
	// trials, of each trial's Outage and Refusing.
	Outage, Refusing [2]time.Duration
	// Finding describes the first trial with an anomaly ("" when none).
	Finding string `json:",omitempty"`
	// Timeline is the first trial's figure, relative to the report's
	// directory ("" when none, and under the None nemesis).
	Timeline string   `json:",omitempty"`
	Verdicts []string // every trial's verdict line
	Errors   []string `json:",omitempty"` // harness errors
}

func (r CellRecord) key() [2]string { return [2]string{r.Nemesis, r.Setup} }

// record summarizes the cell; out is the report's directory.
func (c *Cell) record(out string, started time.Time) CellRecord {
	r := CellRecord{Nemesis: c.Nemesis, Setup: c.Setup, Started: started.UTC(), Counts: map[string]int{}, Errors: c.Errors}
	var outs, refs []time.Duration
	for _, t := range c.Trials {
		if r.Trials == 0 || t.Config.Seed < r.Seed {
			r.Seed = t.Config.Seed
		}
		r.Trials++
		r.Verdicts = append(r.Verdicts, t.Verdict())
		if t.Check.Status() == check.StatusInvalid {
			r.Invalid++
			continue
		}
		for k, v := range t.Check.Counts {
			r.Counts[k] += v
		}
		r.Acknowledged += t.Check.Acked
		r.Vanished += t.Check.Vanished
		r.Unpromised += len(t.Check.Unpromised)
		r.Retried += t.Check.Retried
		if t.Check.Status() == check.StatusAnomalies {
			r.WithAnomalies++
			if r.Finding == "" {
				quick := ""
				if t.Config.Quick {
					quick = "--quick " // its shorter runs
				}
				r.Finding = fmt.Sprintf("`%s` under `%s`, seed %d: %s. First: %s. Replay: `kafka-faults %s--nemesis=%s --config=%s --replay=%d`.",
					c.Setup, c.Nemesis, t.Config.Seed, counts(t.Check), t.Check.Anomalies[0], quick, c.Nemesis, c.Setup, t.Config.Seed)
			}
		}
		outs = append(outs, t.Outage)
		refs = append(refs, t.Refusing)
	}
	r.Outage, r.Refusing = medianMax(outs), medianMax(refs)
	if len(c.Trials) > 0 && c.Nemesis != None { // the report shows no control's timeline
		rel, err := filepath.Rel(out, filepath.Join(TrialDir(out, c.Nemesis, c.Setup, c.Trials[0].Config.Seed), "timeline.png"))
		if err == nil {
			r.Timeline = filepath.ToSlash(rel)
		}
	}
	return r
}

func medianMax(ds []time.Duration) [2]time.Duration {
	if len(ds) == 0 {
		return [2]time.Duration{}
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return [2]time.Duration{ds[len(ds)/2], ds[len(ds)-1]}
}

// recordFile is OUT/cells.json.
type recordFile struct {
	Started time.Time // when the earliest of the runs began
	Cells   []CellRecord
}

// cellsFile is the name of a run's records, beside report.md.
const cellsFile = "cells.json"

func writeRecords(out string, started time.Time, recs []CellRecord) error {
	b, err := json.MarshalIndent(recordFile{Started: started.UTC(), Cells: recs}, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, cellsFile), append(b, '\n'), 0o644)
}

// loadRecords reads the records of the run in dir: its cells.json, or, for
// a run made before cells.json existed, its report.md (ParseReport). ok is
// false when dir has neither.
func loadRecords(dir string) (recs []CellRecord, started time.Time, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, cellsFile))
	if err == nil {
		var f recordFile
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, time.Time{}, true, fmt.Errorf("faults: %s: %w", filepath.Join(dir, cellsFile), err)
		}
		for i, r := range f.Cells {
			if r.Nemesis == "" || r.Setup == "" {
				return nil, time.Time{}, true, fmt.Errorf("faults: %s: cell %d names no nemesis or configuration", filepath.Join(dir, cellsFile), i)
			}
			if r.Started.IsZero() {
				f.Cells[i].Started = f.Started
			}
			for old, now := range check.Legacy {
				if v, ok := r.Counts[old]; ok {
					delete(r.Counts, old)
					r.Counts[now] = v
				}
			}
		}
		return f.Cells, f.Started, true, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, time.Time{}, false, err
	}
	f, err := os.Open(filepath.Join(dir, "report.md"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, time.Time{}, false, nil
	}
	if err != nil {
		return nil, time.Time{}, false, err
	}
	defer f.Close()
	recs, started, err = ParseReport(f)
	if err != nil {
		return nil, time.Time{}, true, fmt.Errorf("faults: %s: %w", filepath.Join(dir, "report.md"), err)
	}
	return recs, started, true, nil
}

// matrixHeader is the report's matrix header row (Report writes it).
func matrixHeader() string {
	return "| nemesis | configuration | trials | invalid | with anomalies | acknowledged | " + strings.Join(check.Kinds, " | ") +
		" | not promised | vanished (unacked) | longest write outage, median (max) | refusing writes, median (max) |"
}

// logHeader is the matrix header of reports written before the consumer
// kinds (check.LogKinds).
func logHeader() string {
	return "| nemesis | configuration | trials | invalid | with anomalies | acknowledged | " + strings.Join(check.LogKinds, " | ") +
		" | not promised | vanished (unacked) | longest write outage, median (max) | refusing writes, median (max) |"
}

// legacyHeader is the matrix header of reports written before the
// invalid and not-promised columns and Jepsen's names.
func legacyHeader() string {
	return "| nemesis | configuration | trials | with anomalies | acknowledged | " + strings.Join(check.LegacyKinds, " | ") +
		" | vanished (unacked) | longest write outage, median (max) | refusing writes, median (max) |"
}

// ParseReport reads back the cells of a report.md written by Report: the
// matrix's rows, the findings, the timelines and every trial's verdict
// line, and the run's start. It is how a run made before cells.json
// existed joins a merged report (Rereport); rendering what it returns
// gives the same tables. A report of another shape is refused with the
// line that does not fit.
func ParseReport(r io.Reader) ([]CellRecord, time.Time, error) {
	var (
		recs    []CellRecord
		index   = map[[2]string]int{}
		started time.Time
		section string
		fenced  bool
		header  = matrixHeader()
		legacy  bool
		kinds   = check.Kinds
		nline   int
	)
	cell := func(nemesis, setup string) (*CellRecord, error) {
		i, ok := index[[2]string{nemesis, setup}]
		if !ok {
			return nil, fmt.Errorf("line %d: cell %s %s is not in the matrix", nline, nemesis, setup)
		}
		return &recs[i], nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		nline++
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			section, fenced = strings.TrimPrefix(line, "## "), false
			continue
		}
		switch {
		case section == "" && strings.HasPrefix(line, "Run: "):
			v, _, _ := strings.Cut(strings.TrimPrefix(line, "Run: "), ",")
			v, _, _ = strings.Cut(v, " (")
			t, err := time.Parse("2006-01-02 15:04 UTC", strings.TrimSuffix(v, "."))
			if err != nil {
				return nil, time.Time{}, fmt.Errorf("line %d: run start: %w", nline, err)
			}
			started = t
		case section == "Matrix" && strings.HasPrefix(line, "|"):
			if line == header || strings.HasPrefix(line, "|---") {
				continue
			}
			if line == legacyHeader() {
				legacy, kinds = true, check.LogKinds
				continue
			}
			if line == logHeader() {
				kinds = check.LogKinds
				continue
			}
			if strings.HasPrefix(line, "| nemesis |") {
				return nil, time.Time{}, fmt.Errorf("line %d: the matrix's columns are not this version's: %q", nline, line)
			}
			rec, err := parseRow(line, legacy, kinds)
			if err != nil {
				return nil, time.Time{}, fmt.Errorf("line %d: %w", nline, err)
			}
			if _, dup := index[rec.key()]; dup {
				return nil, time.Time{}, fmt.Errorf("line %d: cell %s %s twice", nline, rec.Nemesis, rec.Setup)
			}
			index[rec.key()] = len(recs)
			recs = append(recs, rec)
		case section == "Findings" && strings.HasPrefix(line, "- `"):
			text := strings.TrimPrefix(line, "- ")
			var setup, nemesis string
			rest, ok := strings.CutPrefix(text, "`")
			if ok {
				setup, rest, ok = strings.Cut(rest, "` under `")
			}
			if ok {
				nemesis, _, ok = strings.Cut(rest, "`, seed ")
			}
			if !ok {
				return nil, time.Time{}, fmt.Errorf("line %d: a finding that does not start \"- `CONFIG` under `NEMESIS`, seed\"", nline)
			}
			c, err := cell(nemesis, setup)
			if err != nil {
				return nil, time.Time{}, err
			}
			c.Finding = text
		case section == "Timelines" && strings.HasPrefix(line, "!["):
			alt, path, ok := strings.Cut(strings.TrimPrefix(line, "!["), "](")
			nemesis, setup, ok2 := strings.Cut(alt, " ")
			if !ok || !ok2 || !strings.HasSuffix(path, ")") {
				return nil, time.Time{}, fmt.Errorf("line %d: a figure that is not \"![NEMESIS CONFIG](PATH)\"", nline)
			}
			c, err := cell(nemesis, setup)
			if err != nil {
				return nil, time.Time{}, err
			}
			c.Timeline = strings.TrimSuffix(path, ")")
		case section == "Every trial" && line == "```":
			fenced = !fenced
		case section == "Every trial" && fenced:
			var seed int64
			var nemesis, setup string
			if _, err := fmt.Sscanf(line, "seed %d %s %s", &seed, &nemesis, &setup); err != nil || !strings.HasSuffix(setup, ":") {
				return nil, time.Time{}, fmt.Errorf("line %d: a trial's line that does not start \"seed N NEMESIS CONFIG:\"", nline)
			}
			c, err := cell(nemesis, strings.TrimSuffix(setup, ":"))
			if err != nil {
				return nil, time.Time{}, err
			}
			if strings.Contains(line, ": harness error: ") {
				c.Errors = append(c.Errors, line)
			} else {
				c.Verdicts = append(c.Verdicts, line)
			}
			if len(c.Verdicts)+len(c.Errors) == 1 || seed < c.Seed {
				c.Seed = seed
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, time.Time{}, fmt.Errorf("line %d: %w", nline+1, err)
	}
	if len(recs) == 0 {
		return nil, time.Time{}, errors.New("no matrix")
	}
	// The page names the runs, not which cell each made: every cell gets
	// the earliest.
	for i := range recs {
		recs[i].Started = started
	}
	for _, c := range recs {
		if len(c.Verdicts) != c.Trials {
			return nil, time.Time{}, fmt.Errorf("cell %s %s: %d trials in the matrix, %d verdict lines", c.Nemesis, c.Setup, c.Trials, len(c.Verdicts))
		}
	}
	return recs, started, nil
}

// parseRow reads one row of the matrix: this version's, or a legacy
// report's (no invalid and not-promised columns; its kinds' old names,
// read as today's), with the anomaly columns kinds.
func parseRow(line string, legacy bool, kinds []string) (CellRecord, error) {
	f := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|"), "|")
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	// The counts between the configuration and the durations, in order.
	names := []string{"trials", "invalid", "with", "acked"}
	names = append(names, kinds...)
	names = append(names, "unpromised", "vanished")
	if legacy {
		names = append([]string{"trials", "with", "acked"}, kinds...)
		names = append(names, "vanished")
	}
	if want := 2 + len(names) + 2; len(f) != want {
		return CellRecord{}, fmt.Errorf("a matrix row of %d columns, want %d", len(f), want)
	}
	r := CellRecord{Nemesis: f[0], Setup: f[1], Counts: map[string]int{}}
	if r.Nemesis == "" || r.Setup == "" || strings.ContainsAny(r.Nemesis+r.Setup, " `") {
		return CellRecord{}, fmt.Errorf("a matrix row naming no nemesis or configuration")
	}
	for i, name := range names {
		if name == check.Duplicate && !legacy {
			n, retried, err := parseDuplicateCell(f[2+i])
			if err != nil {
				return CellRecord{}, err
			}
			r.Counts[name], r.Retried = n, retried
			continue
		}
		n, err := strconv.Atoi(f[2+i])
		if err != nil || n < 0 {
			return CellRecord{}, fmt.Errorf("a matrix row's count %q is not a number", f[2+i])
		}
		switch name {
		case "trials":
			r.Trials = n
		case "invalid":
			r.Invalid = n
		case "with":
			r.WithAnomalies = n
		case "acked":
			r.Acknowledged = n
		case "unpromised":
			r.Unpromised = n
		case "vanished":
			r.Vanished = n
		default:
			r.Counts[name] = n
		}
	}
	var err error
	if r.Outage, err = parseMedianMax(f[len(f)-2], r.Trials); err != nil {
		return CellRecord{}, err
	}
	if r.Refusing, err = parseMedianMax(f[len(f)-1], r.Trials); err != nil {
		return CellRecord{}, err
	}
	return r, nil
}

// duplicateCell is the matrix's duplicate column: every duplicate, and
// when retries explain some of them, how many ("25 (25 retried)"): those
// are not promised (delivery at least once) and counted in the not
// promised column too; the others are anomalies.
func duplicateCell(c CellRecord) string {
	if c.Retried == 0 {
		return strconv.Itoa(c.Counts[check.Duplicate])
	}
	return fmt.Sprintf("%d (%d retried)", c.Counts[check.Duplicate]+c.Retried, c.Retried)
}

// parseDuplicateCell reads duplicateCell: the duplicates no retry explains
// and those one does.
func parseDuplicateCell(s string) (unexplained, retried int, err error) {
	total, err := strconv.Atoi(s)
	if err != nil {
		var n int
		if n, err = fmt.Sscanf(s, "%d (%d retried)", &total, &retried); err != nil || n != 2 {
			return 0, 0, fmt.Errorf("a matrix row's duplicate count %q is not \"N\" or \"N (R retried)\"", s)
		}
	}
	if total < 0 || retried < 0 || retried > total || s != duplicateCell(CellRecord{Counts: map[string]int{check.Duplicate: total - retried}, Retried: retried}) {
		return 0, 0, fmt.Errorf("a matrix row's duplicate count %q is not \"N\" or \"N (R retried)\"", s)
	}
	return total - retried, retried, nil
}

// parseMedianMax reads "1.5 s (2.0 s)" ("-" in a cell without trials).
func parseMedianMax(s string, trials int) ([2]time.Duration, error) {
	if s == "-" && trials == 0 {
		return [2]time.Duration{}, nil
	}
	var a, b float64
	if n, err := fmt.Sscanf(s, "%f s (%f s)", &a, &b); err != nil || n != 2 || trials == 0 ||
		a < 0 || b < a || b > 1e6 || s != fmt.Sprintf("%.1f s (%.1f s)", a, b) {
		return [2]time.Duration{}, fmt.Errorf("a matrix row's duration %q is not \"MEDIAN s (MAX s)\"", s)
	}
	ms := func(x float64) time.Duration { return time.Duration(math.Round(x*1000)) * time.Millisecond }
	return [2]time.Duration{ms(a), ms(b)}, nil
}

// copyFile copies a small file (a timeline figure), making dst's directory.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
