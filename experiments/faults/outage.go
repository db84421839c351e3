package faults

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/experiments/faults/check"
)

// Outage is the longest time any partition went without an acknowledged
// write while the producers were running: from a fault to the first write
// acknowledged after it, when a fault stops writes (issue 13's
// availability). Zero when nothing was acknowledged.
func Outage(evs []check.Event) time.Duration {
	acks := map[check.TP][]time.Time{}
	var first, last time.Time
	for _, e := range evs {
		if e.Type != check.TypeSend {
			continue
		}
		if first.IsZero() || e.Start.Before(first) {
			first = e.Start
		}
		if e.Start.After(last) {
			last = e.Start
		}
		if e.Outcome == check.OK && !e.End.IsZero() {
			tp := check.TP{Topic: e.Topic, Partition: e.Partition}
			acks[tp] = append(acks[tp], e.End)
		}
	}
	var worst time.Duration
	for _, ts := range acks {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		prev := first
		for _, t := range ts {
			worst = max(worst, t.Sub(prev))
			prev = t
		}
		worst = max(worst, last.Sub(prev))
	}
	return worst
}

// ResultFromHistory rebuilds a trial's result from its history file: the
// checker's verdict, the fault windows, the throughput timeline. The
// trial's start is its first send.
func ResultFromHistory(path string) (*TrialResult, error) {
	evs, err := ReadHistory(path)
	if err != nil {
		return nil, err
	}
	r := &TrialResult{History: path, Bin: 250 * time.Millisecond}
	var start, end time.Time
	for _, e := range evs {
		switch e.Type {
		case check.TypeMeta:
			r.Config.Seed = e.Seed
			r.Config.Nemesis = e.Config["nemesis"]
			r.Config.Setup = e.Config["setup"]
			if r.Config.Setup == "" {
				r.Config.Setup = e.Config["acks"]
			}
			r.Config.Length, _ = time.ParseDuration(e.Config["length"])
			r.Config.ZooKeeper = e.Config["zookeeper"]
		case check.TypeSend:
			if start.IsZero() || e.Start.Before(start) {
				start = e.Start
			}
			if e.Start.After(end) {
				end = e.Start
			}
		}
	}
	if r.Config.Nemesis == "" || r.Config.Setup == "" {
		return nil, fmt.Errorf("faults: %s: no meta event naming the nemesis and configuration", path)
	}
	for _, e := range evs {
		if e.Type != check.TypeNemesis {
			continue
		}
		b, _ := strconv.Atoi(strings.TrimPrefix(e.Target, "broker"))
		w := Window{Fault: Fault{Kind: e.Name, Broker: b}, Start: e.Start.Sub(start), End: e.End.Sub(start), Err: e.Error}
		w.At, w.For = w.Start, w.End-w.Start
		r.Windows = append(r.Windows, w)
	}
	if r.Config.Length == 0 {
		r.Config.Length = end.Sub(start)
	}
	r.Check = check.Check(evs)
	r.Outage = Outage(evs)
	r.Refusing = Refusing(evs)
	r.Rate = rate(evs, start, r.Config.Length, r.Bin, r.Config.Setup == AckNone)
	return r, nil
}

// Rereport rebuilds a suite's report from the histories under
// out/trials, redrawing each timeline: the checker and the report rerun
// on what the trials recorded, without running them again. A cell of
// out's report with no history left under out/trials (a committed copy
// keeps no histories) is kept as out/cells.json recorded it, or, for a
// run made before cells.json existed, as out/report.md shows it
// (ParseReport). Each directory in merge adds the cells of another run
// (its cells.json or report.md; run --rereport on it first to recheck its
// histories), with their timelines copied under out/trials; a cell out
// has already is refused (RereportReplace replaces it). It writes
// out/report.md and out/cells.json.
func Rereport(out string, merge ...string) (*Suite, error) { return rereport(out, merge, false) }

// RereportReplace is Rereport where a merged cell replaces a recorded cell
// of out of the same nemesis and configuration (a cell rerun with more
// trials); a cell out has histories of is still refused.
func RereportReplace(out string, merge ...string) (*Suite, error) { return rereport(out, merge, true) }

func rereport(out string, merge []string, replace bool) (*Suite, error) {
	paths, err := filepath.Glob(filepath.Join(out, "trials", "*", "history.jsonl"))
	if err != nil {
		return nil, err
	}
	s := &Suite{Config: SuiteConfig{Out: out}, sorted: true}
	cells := map[[2]string]*Cell{}
	var errs []error
	for _, p := range paths {
		r, err := ResultFromHistory(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if fi, err := os.Stat(p); err == nil && (s.Started.IsZero() || fi.ModTime().Before(s.Started)) {
			s.Started = fi.ModTime()
		}
		k := [2]string{r.Config.Nemesis, r.Config.Setup}
		c := cells[k]
		if c == nil {
			c = &Cell{Nemesis: k[0], Setup: k[1]}
			cells[k] = c
			s.Cells = append(s.Cells, c)
		}
		c.Trials = append(c.Trials, r)
		errs = append(errs, SaveTimeline(filepath.Join(filepath.Dir(p), "timeline.png"), r))
	}
	for _, c := range s.Cells {
		slices.SortFunc(c.Trials, func(a, b *TrialResult) int { return cmp.Compare(a.Config.Seed, b.Config.Seed) })
	}
	s.Config.Trial.ZooKeeper, s.Config.EnsembleCells = zooKeeperOf(s.Cells)
	s.cellsStarted = s.Started
	have := map[[2]string]bool{}
	for k := range cells {
		have[k] = true
	}
	earliest := func(t time.Time) {
		if !t.IsZero() && (s.Started.IsZero() || t.Before(s.Started)) {
			s.Started = t
		}
	}
	own, started, _, err := loadRecords(out)
	if err != nil {
		return nil, err
	}
	kept := false
	for _, r := range own {
		if !have[r.key()] {
			have[r.key()] = true
			s.Recorded = append(s.Recorded, r)
			kept = true
		}
	}
	if kept {
		earliest(started)
	}
	for _, m := range merge {
		recs, started, ok, err := loadRecords(m)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("faults: %s has no %s or report.md to merge (run --rereport=%s first)", m, cellsFile, m)
		}
		earliest(started)
		for _, r := range recs {
			if i := slices.IndexFunc(s.Recorded, func(o CellRecord) bool { return o.key() == r.key() }); replace && i >= 0 {
				s.Recorded = slices.Delete(s.Recorded, i, i+1)
			} else if have[r.key()] {
				return nil, fmt.Errorf("faults: cell %s %s of %s is in %s already", r.Nemesis, r.Setup, m, out)
			}
			have[r.key()] = true
			if r.Timeline != "" {
				rel := filepath.FromSlash(r.Timeline)
				if !filepath.IsLocal(rel) {
					return nil, fmt.Errorf("faults: %s: cell %s %s's timeline %q is outside its directory", m, r.Nemesis, r.Setup, r.Timeline)
				}
				if err := copyFile(filepath.Join(m, rel), filepath.Join(out, rel)); err != nil {
					errs = append(errs, err)
					r.Timeline = ""
				}
			}
			s.Recorded = append(s.Recorded, r)
		}
	}
	recs := s.Records()
	if len(recs) == 0 {
		return nil, errors.Join(append([]error{fmt.Errorf("faults: no histories under %s and no cells recorded", filepath.Join(out, "trials"))}, errs...)...)
	}
	for i, r := range recs {
		s.Config.Trials = max(s.Config.Trials, r.Trials)
		if i == 0 || r.Seed < s.Config.Seed {
			s.Config.Seed = r.Seed
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return s, err
	}
	errs = append(errs, s.save(out))
	return s, errors.Join(errs...)
}
