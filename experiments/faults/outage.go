package faults

import (
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
// on what the trials recorded, without running them again.
func Rereport(out string) (*Suite, error) {
	paths, err := filepath.Glob(filepath.Join(out, "trials", "*", "history.jsonl"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("faults: no histories under %s", filepath.Join(out, "trials"))
	}
	s := &Suite{Config: SuiteConfig{Out: out}}
	cells := map[[2]string]*Cell{}
	var errs []error
	var seeds []int64
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
		seeds = append(seeds, r.Config.Seed)
		errs = append(errs, SaveTimeline(filepath.Join(filepath.Dir(p), "timeline.png"), r))
	}
	order := func(list []string, x string) int {
		if i := slices.Index(list, x); i >= 0 {
			return i
		}
		return len(list)
	}
	slices.SortFunc(s.Cells, func(a, b *Cell) int {
		if d := order(SetupNames, a.Setup) - order(SetupNames, b.Setup); d != 0 {
			return d
		}
		return order(Nemeses, a.Nemesis) - order(Nemeses, b.Nemesis)
	})
	for _, c := range s.Cells {
		slices.SortFunc(c.Trials, func(a, b *TrialResult) int { return int(a.Config.Seed - b.Config.Seed) })
		s.Config.Trials = max(s.Config.Trials, len(c.Trials))
	}
	slices.Sort(seeds)
	s.Config.Seed = seeds[0]
	if err := os.WriteFile(filepath.Join(out, "report.md"), []byte(s.Report()), 0o644); err != nil {
		errs = append(errs, err)
	}
	return s, errors.Join(errs...)
}
