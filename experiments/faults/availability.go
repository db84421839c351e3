package faults

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/experiments/faults/check"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Failover is the availability experiment's measure over one history
// (issue 13, experiment 2): the time from the first kill-leader or
// stop-leader fault's start (the SIGKILL or SIGTERM of partition 0's
// leader) to the end of the first
// write to partition 0 that was sent after it and acknowledged, i.e. by
// the partition's next leader. ok is false when the history has no such
// fault or no such write.
func Failover(evs []check.Event) (d time.Duration, ok bool) {
	var kill time.Time
	for _, e := range evs {
		if e.Type == check.TypeNemesis && (e.Name == KillLeader || e.Name == StopLeader) && e.Error == "" {
			kill = e.Start
			break
		}
	}
	if kill.IsZero() {
		return 0, false
	}
	var first time.Time
	for _, e := range evs {
		if e.Type != check.TypeSend || e.Partition != 0 || e.Outcome != check.OK || !e.Start.After(kill) {
			continue
		}
		if first.IsZero() || e.End.Before(first) {
			first = e.End
		}
	}
	if first.IsZero() {
		return 0, false
	}
	return first.Sub(kill), true
}

// Refusing is the price of min.insync.replicas (issue 13, experiment 2):
// per partition, the total time its writes were refused before being
// appended (NotEnoughReplicas: outcome "failed" in a replicated history),
// each refusal spell lasting from the first refused write's start to the
// end of the next acknowledged write (or, when none came, the last refused
// write's end); the largest over the partitions.
func Refusing(evs []check.Event) time.Duration {
	sends := map[check.TP][]check.Event{}
	for _, e := range evs {
		if e.Type == check.TypeSend && !e.Start.IsZero() {
			tp := check.TP{Topic: e.Topic, Partition: e.Partition}
			sends[tp] = append(sends[tp], e)
		}
	}
	var worst time.Duration
	for _, ss := range sends {
		slices.SortStableFunc(ss, func(a, b check.Event) int { return a.Start.Compare(b.Start) })
		var total time.Duration
		var from, last time.Time
		for _, e := range ss {
			switch {
			case e.Outcome == check.Failed:
				if from.IsZero() {
					from = e.Start
				}
				last = e.End
			case e.Outcome == check.OK && !from.IsZero():
				total += e.End.Sub(from)
				from = time.Time{}
			}
		}
		if !from.IsZero() {
			total += last.Sub(from)
		}
		worst = max(worst, total)
	}
	return worst
}

// AvailabilityConfig is the availability sweep: trials of the kill-leader
// (or stop-leader) nemesis against Setup for each ZooKeeper session
// timeout.
type AvailabilityConfig struct {
	SessionTimeouts []time.Duration
	Setup           string // default "safe"
	Nemesis         string // KillLeader (default) or StopLeader
	Suite           SuiteConfig
}

// AvailabilityDir is where the trials of one nemesis and session timeout go.
func AvailabilityDir(out, nemesis string, st time.Duration) string {
	name := fmt.Sprintf("st-%dms", st.Milliseconds())
	if nemesis != KillLeader {
		name = nemesis + "-" + name
	}
	return filepath.Join(out, "availability", name)
}

// RunAvailability runs the sweep, one suite per session timeout under
// OUT/availability/st-<ms>, then writes OUT/availability.md and
// OUT/availability.png from the histories (AvailabilityReport).
func RunAvailability(ctx context.Context, cfg AvailabilityConfig) error {
	if cfg.Setup == "" {
		cfg.Setup = "safe"
	}
	if cfg.Nemesis == "" {
		cfg.Nemesis = KillLeader
	}
	if cfg.Nemesis != KillLeader && cfg.Nemesis != StopLeader {
		return fmt.Errorf("faults: the availability sweep takes %s or %s, not %q", KillLeader, StopLeader, cfg.Nemesis)
	}
	out := cfg.Suite.Out
	var errs []error
	for _, st := range cfg.SessionTimeouts {
		sc := cfg.Suite
		sc.Pairs = [][2]string{{cfg.Nemesis, cfg.Setup}}
		sc.Out = AvailabilityDir(out, cfg.Nemesis, st)
		sc.Trial.SessionTimeout = st
		if _, err := RunSuite(ctx, sc); err != nil {
			errs = append(errs, fmt.Errorf("session timeout %v: %w", st, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	_, err := AvailabilityReport(out)
	return errors.Join(append(errs, err)...)
}

// AvailabilityRow is one session timeout's failovers.
type AvailabilityRow struct {
	SessionTimeout time.Duration
	Nemesis        string
	Setup          string
	Failovers      []time.Duration // sorted
	Missing        []int64         // seeds whose history had no failover to measure
}

// Quantile is the nearest-rank q-quantile of sorted ds (with fewer than
// 1/(1-q) samples, p99 is the largest).
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// AvailabilityReport reads every history under OUT/availability, groups
// the failovers by session timeout (from each history's meta event) and
// writes OUT/availability.md and OUT/availability.png.
func AvailabilityReport(out string) ([]AvailabilityRow, error) {
	paths, err := filepath.Glob(filepath.Join(out, "availability", "*", "trials", "*", "history.jsonl"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("faults: no histories under %s", filepath.Join(out, "availability"))
	}
	rows := map[string]*AvailabilityRow{}
	var errs []error
	for _, p := range paths {
		evs, err := ReadHistory(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var meta check.Event
		for _, e := range evs {
			if e.Type == check.TypeMeta {
				meta = e
				break
			}
		}
		ms, err := strconv.Atoi(meta.Config["zk.sessiontimeout.ms"])
		if err != nil {
			errs = append(errs, fmt.Errorf("faults: %s: no zk.sessiontimeout.ms in its meta event", p))
			continue
		}
		k := meta.Config["nemesis"] + "/" + meta.Config["setup"] + "/" + strconv.Itoa(ms)
		r := rows[k]
		if r == nil {
			r = &AvailabilityRow{SessionTimeout: time.Duration(ms) * time.Millisecond, Nemesis: meta.Config["nemesis"], Setup: meta.Config["setup"]}
			rows[k] = r
		}
		if d, ok := Failover(evs); ok {
			r.Failovers = append(r.Failovers, d)
		} else {
			r.Missing = append(r.Missing, meta.Seed)
		}
	}
	var list []AvailabilityRow
	for _, r := range rows {
		slices.Sort(r.Failovers)
		slices.Sort(r.Missing)
		list = append(list, *r)
	}
	slices.SortFunc(list, func(a, b AvailabilityRow) int {
		if c := strings.Compare(a.Nemesis, b.Nemesis); c != 0 {
			return c
		}
		if c := strings.Compare(a.Setup, b.Setup); c != 0 {
			return c
		}
		return int(a.SessionTimeout - b.SessionTimeout)
	})
	errs = append(errs, os.WriteFile(filepath.Join(out, "availability.md"), []byte(availabilityMarkdown(list)), 0o644))
	errs = append(errs, saveAvailability(filepath.Join(out, "availability.png"), list))
	return list, errors.Join(errs...)
}

func availabilityMarkdown(rows []AvailabilityRow) string {
	var b strings.Builder
	b.WriteString("# Availability: from a leader's death to its successor's first acknowledged write\n\n")
	b.WriteString("Each trial SIGKILLs the leader of partition 0 (nemesis `kill-leader`; `stop-leader`: a clean shutdown, SIGTERM, instead) of a replicated topic (RF=3) while one producer per partition " +
		"writes a batch every 20 ms with one attempt per batch, and measures the time from the kill to the end of the first write to partition 0 " +
		"sent after it and acknowledged. A killed broker's ZooKeeper session ends only when it times out, so the controller learns of the death " +
		"after `zk.sessiontimeout.ms` (counted from the last time the server heard from the broker: the client pings every third of it, " +
		"and the server expires sessions in ticks of 500 ms), elects a leader from the ISR and sends its orders; the producer finds the new leader by METADATA. " +
		"A broker shut down cleanly closes its session, and its registration goes at once. " +
		"p99 is the nearest rank: with fewer than 100 trials it is the largest.\n\n")
	b.WriteString("| leader | configuration | zk.sessiontimeout.ms | trials | failover median | p99 | min | median - session timeout | not measured (seeds) |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		med, p99, lo := Quantile(r.Failovers, 0.5), Quantile(r.Failovers, 0.99), Quantile(r.Failovers, 0)
		missing := "-"
		if len(r.Missing) > 0 {
			missing = fmt.Sprint(r.Missing)
		}
		how := map[string]string{KillLeader: "SIGKILL", StopLeader: "clean stop"}[r.Nemesis]
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %.2f s | %.2f s | %.2f s | %.2f s | %s |\n", how, r.Setup, r.SessionTimeout.Milliseconds(), len(r.Failovers),
			med.Seconds(), p99.Seconds(), lo.Seconds(), (med - r.SessionTimeout).Seconds(), missing)
	}
	b.WriteString("\nEvery trial's failover, sorted (s):\n\n")
	for _, r := range rows {
		var xs []string
		for _, d := range r.Failovers {
			xs = append(xs, fmt.Sprintf("%.2f", d.Seconds()))
		}
		fmt.Fprintf(&b, "- %s, %s, zk.sessiontimeout.ms=%d: %s\n", r.Nemesis, r.Setup, r.SessionTimeout.Milliseconds(), strings.Join(xs, ", "))
	}
	b.WriteString("\n![failover against the session timeout](availability.png)\n\n")
	b.WriteString("Rerun: `kafka-faults --availability --session-timeouts=1.5s,3s,6s --trials=10` (`--nemesis=stop-leader` for the clean stop); one trial by its seed: " +
		"`kafka-faults --nemesis=kill-leader --config=safe --zk.sessiontimeout.ms=MS --replay=SEED`; rebuild this page from the histories: `kafka-faults --availability --rereport=DIR`.\n")
	return b.String()
}

// saveAvailability draws every failover against its session timeout, with
// the median and p99 as lines and the session timeout itself as a dashed
// reference.
func saveAvailability(path string, rows []AvailabilityRow) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("faults: drawing %s: %v", path, p)
		}
	}()
	pl := plot.New()
	pl.Title.Text = "leader SIGKILLed or stopped: time to its successor's first acknowledged write"
	pl.X.Label.Text = "zk.sessiontimeout.ms (s)"
	pl.Y.Label.Text = "failover (s)"
	var ref plotter.XYs
	colors := map[string]color.RGBA{KillLeader: {0, 114, 178, 255}, StopLeader: {0, 158, 115, 255}}
	for _, nem := range []string{KillLeader, StopLeader} {
		var pts, meds, p99s plotter.XYs
		for _, r := range rows {
			if r.Nemesis != nem {
				continue
			}
			x := r.SessionTimeout.Seconds()
			for _, d := range r.Failovers {
				pts = append(pts, plotter.XY{X: x, Y: d.Seconds()})
			}
			if len(r.Failovers) > 0 {
				meds = append(meds, plotter.XY{X: x, Y: Quantile(r.Failovers, 0.5).Seconds()})
				p99s = append(p99s, plotter.XY{X: x, Y: Quantile(r.Failovers, 0.99).Seconds()})
			}
			if !slices.Contains(ref, plotter.XY{X: x, Y: x}) {
				ref = append(ref, plotter.XY{X: x, Y: x})
			}
		}
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color = colors[nem]
		sc.GlyphStyle.Radius = vg.Points(2.5)
		pl.Add(sc)
		pl.Legend.Add(nem+": trial", sc)
		for _, l := range []struct {
			name string
			xys  plotter.XYs
			dash bool
		}{{"median", meds, false}, {"p99", p99s, true}} {
			line, err := plotter.NewLine(l.xys)
			if err != nil {
				return err
			}
			line.Color = colors[nem]
			line.Width = vg.Points(1.5)
			if l.dash {
				line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			pl.Add(line)
			pl.Legend.Add(nem+": "+l.name, line)
		}
	}
	if len(ref) == 0 {
		return errors.New("faults: no failovers to draw")
	}
	slices.SortFunc(ref, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
	line, err := plotter.NewLine(ref)
	if err != nil {
		return err
	}
	line.Color = color.RGBA{120, 120, 120, 255}
	line.Width = vg.Points(1)
	line.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	pl.Add(line)
	pl.Legend.Add("session timeout", line)
	pl.Legend.Top, pl.Legend.Left = true, true
	pl.X.Min, pl.Y.Min = 0, 0
	top := 0.0
	for _, r := range rows {
		for _, d := range r.Failovers {
			top = max(top, d.Seconds())
		}
	}
	for _, r := range ref {
		pl.X.Max = max(pl.X.Max, r.X*1.1)
		top = max(top, r.Y)
	}
	pl.Y.Max = top * 1.8 // room for the legend above the data
	return savePNG(path, pl, 14*vg.Centimeter, 9*vg.Centimeter)
}
