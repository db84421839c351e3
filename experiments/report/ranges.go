package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// WideRange is the spread (max/min) above which the report explains a
// range from the runs' conditions instead of leaving it as noise (issue 14).
const WideRange = 1.5

// wideRange is WideRange as the report writes it.
var wideRange = strconv.FormatFloat(WideRange, 'g', -1, 64)

// RunFacts is what the harness recorded about one repetition that can
// explain its rate; NaN (or "") where not recorded.
type RunFacts struct {
	// Rep is the repetition's number and Rate its messages per second.
	Rep  int
	Rate float64
	// Kind is the producer's phase (KindBurst, KindSustained, KindBoth);
	// empty for other runs. KneeT and After describe the knee of a KindBoth
	// run.
	Kind          string
	KneeT, After  float64
	Load          float64 // 1-minute load average at the start
	OtherCPU      float64 // cores taken by other processes during the run
	Dirty         float64 // bytes of the page cache not yet on the disk at the start
	CacheResident float64 // share of a consumer's log in the page cache at the start
}

// factsOf gathers the facts of runs (one configuration's repetitions).
func factsOf(set *results.Set, runs []results.Run, lim Limits) []RunFacts {
	out := make([]RunFacts, 0, len(runs))
	for _, r := range runs {
		f := RunFacts{Rep: r.Rep, Rate: r.Result.MsgsPerSec, KneeT: math.NaN(), After: math.NaN(),
			Load: math.NaN(), OtherCPU: math.NaN(), Dirty: math.NaN(), CacheResident: math.NaN()}
		if r.System == results.Kafka && r.Phase == results.Produce {
			p := ProducerPhase(r, bytesPerMessage(set, r), lim.DiskWrite)
			f.Kind = p.Kind
			if p.Split.Knee {
				f.KneeT, f.After = p.Split.KneeT, p.Split.After
			}
		}
		if c := r.Conditions; c != nil {
			f.Load = c.LoadAverage
			if c.WallSeconds > 0 && c.BusyCPUSeconds > 0 {
				f.OtherCPU = c.OtherCPU(r.BrokerCPUSeconds)
			}
			if c.DirtyBytes > 0 {
				f.Dirty = float64(c.DirtyBytes)
			}
			if c.CacheResident != nil {
				f.CacheResident = *c.CacheResident
			}
		}
		out = append(out, f)
	}
	return out
}

// ExplainRange says why one configuration's repetitions span more than
// WideRange (max/min), from what was recorded about each: it returns "" for a
// narrower range. The runs are divided at the widest gap between consecutive
// rates into slow and fast ones, and each recorded condition that separates
// the two groups is named with its values: the producer's phase (the fast
// runs a burst into the page cache, the slow ones at or after the disk's
// pace), unwritten data left in the page cache by earlier runs, a log partly
// out of the page cache, the CPU other processes took, the load average.
// When none separates them it says so, and that the data do not tell why.
// diskMBps is the disk's write limit and perMsg the bytes per message, for
// the phase's sentence.
func ExplainRange(facts []RunFacts, diskMBps, perMsg float64, cores int) string {
	if len(facts) < 2 {
		return ""
	}
	f := slices.Clone(facts)
	sort.Slice(f, func(i, j int) bool { return f[i].Rate < f[j].Rate })
	if f[0].Rate <= 0 || f[len(f)-1].Rate/f[0].Rate <= WideRange {
		return ""
	}
	cut, widest := 1, 0.0
	for i := 1; i < len(f); i++ {
		if g := f[i].Rate / f[i-1].Rate; g > widest {
			cut, widest = i, g
		}
	}
	slow, fast := f[:cut], f[cut:]
	var why []string

	isBurst := func(x RunFacts) bool { return x.Kind == KindBurst }
	paced := func(x RunFacts) bool { return x.Kind == KindSustained || x.Kind == KindBoth }
	if all(fast, isBurst) && all(slow, paced) {
		s := fmt.Sprintf("phase: rep %s ran entirely in the burst, faster than the disk's write limit while the page cache absorbed the writes; rep %s ran at the disk's pace", reps(fast), reps(slow))
		if k := filter(slow, func(x RunFacts) bool { return x.Kind == KindBoth }); len(k) > 0 {
			s += fmt.Sprintf(" (rep %s crossed a knee after %s s, then %s msg/s)", reps(k), spanOf(k, func(x RunFacts) float64 { return x.KneeT }, "%.1f"),
				spanOf(k, func(x RunFacts) float64 { return x.After }, ""))
		}
		if diskMBps > 0 && perMsg > 0 {
			pace := func(x RunFacts) float64 {
				if x.Kind == KindBoth {
					return x.After * perMsg / 1e6 / diskMBps
				}
				return x.Rate * perMsg / 1e6 / diskMBps
			}
			s += fmt.Sprintf(", at %s of the disk's %s MB/s", spanPct(slow, pace), stats.Format(diskMBps))
		}
		why = append(why, s)
	}
	dirty := func(x RunFacts) float64 { return x.Dirty }
	resident := func(x RunFacts) float64 { return x.CacheResident }
	other := func(x RunFacts) float64 { return x.OtherCPU }
	load := func(x RunFacts) float64 { return x.Load }
	// A condition that every slow run had more of (less, for the cache)
	// than every fast run is named as the cause; failing that, one whose
	// ranks follow the rates' closely (Spearman's ρ, at least 4 runs) is
	// named as a tendency.
	if sep(slow, fast, dirty, 64<<20, 1) {
		why = append(why, fmt.Sprintf("unwritten page cache: rep %s began with %s not yet on the disk (left by earlier runs), rep %s with %s",
			reps(slow), spanOf(slow, dirty, "size"), reps(fast), spanOf(fast, dirty, "size")))
	} else if rho, ok := rankTrend(f, dirty, -1); ok {
		why = append(why, fmt.Sprintf("unwritten page cache, as a tendency rather than a clean split: the more unwritten data a run began with (%s), the slower it went (Spearman's ρ = %.2f over %d runs)", spanOf(f, dirty, "size"), rho, len(f)))
	}
	if sep(fast, slow, resident, 0.1, 1) {
		why = append(why, fmt.Sprintf("page cache: rep %s found only %s of its log cached and read the rest from the disk, rep %s %s",
			reps(slow), spanPct(slow, resident), reps(fast), spanPct(fast, resident)))
	}
	if sep(slow, fast, other, 0.25, 1) {
		why = append(why, fmt.Sprintf("CPU: while rep %s ran, other processes took %s of the %d cores, against %s during rep %s",
			reps(slow), spanOf(slow, other, "%.2f"), cores, spanOf(fast, other, "%.2f"), reps(fast)))
	} else if rho, ok := rankTrend(f, other, -1); ok {
		why = append(why, fmt.Sprintf("CPU, as a tendency rather than a clean split: the more of the %d cores other processes took during a run (%s), the slower it went (Spearman's ρ = %.2f over %d runs)", cores, spanOf(f, other, "%.2f"), rho, len(f)))
	}
	if sep(slow, fast, load, 1, 1.25) {
		why = append(why, fmt.Sprintf("load: rep %s began at a load average of %s, rep %s at %s (%d cores)",
			reps(slow), spanOf(slow, load, "%.1f"), reps(fast), spanOf(fast, load, "%.1f"), cores))
	} else if rho, ok := rankTrend(f, load, -1); ok {
		why = append(why, fmt.Sprintf("load, as a tendency rather than a clean split: the higher the load average a run began at (%s), the slower it went (Spearman's ρ = %.2f over %d runs)", spanOf(f, load, "%.1f"), rho, len(f)))
	}
	span := fmt.Sprintf("%s× (slow: rep %s at %s msg/s; fast: rep %s at %s msg/s)", stats.Format(f[len(f)-1].Rate/f[0].Rate),
		reps(slow), spanOf(slow, func(x RunFacts) float64 { return x.Rate }, ""), reps(fast), spanOf(fast, func(x RunFacts) float64 { return x.Rate }, ""))
	if len(why) == 0 {
		return span + ": no recorded condition separates the slow runs from the fast ones (" + recorded(f) + "); these data do not say why."
	}
	return span + ": " + strings.Join(why, "; ") + "."
}

// rankTrend reports whether v follows the runs' rates in rank (sign +1) or
// against them (sign −1) closely: Spearman's ρ of at least 0.8 in that
// direction over at least 4 runs, none of them unrecorded.
func rankTrend(f []RunFacts, v func(RunFacts) float64, sign float64) (float64, bool) {
	if len(f) < 4 {
		return 0, false
	}
	xs, ys := make([]float64, len(f)), make([]float64, len(f))
	for i, x := range f {
		if math.IsNaN(v(x)) {
			return 0, false
		}
		xs[i], ys[i] = x.Rate, v(x)
	}
	rho := Spearman(xs, ys)
	return rho, !math.IsNaN(rho) && sign*rho >= 0.8
}

// Spearman is the rank correlation of xs and ys (ties share their mean
// rank): 1 when ys rise with xs, −1 when they fall, NaN when either is
// constant or they differ in length.
func Spearman(xs, ys []float64) float64 {
	if len(xs) != len(ys) || len(xs) < 2 {
		return math.NaN()
	}
	rx, ry := ranks(xs), ranks(ys)
	var mx, my float64
	for i := range rx {
		mx += rx[i]
		my += ry[i]
	}
	mx /= float64(len(rx))
	my /= float64(len(ry))
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mx, ry[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			r[idx[k]] = float64(i+j)/2 + 1
		}
		i = j + 1
	}
	return r
}

// sep reports whether every value of hi exceeds every value of lo by at
// least by and by a factor of at least factor; a NaN anywhere means not.
func sep(hi, lo []RunFacts, v func(RunFacts) float64, by, factor float64) bool {
	minHi, maxLo := math.Inf(1), math.Inf(-1)
	for _, x := range hi {
		if math.IsNaN(v(x)) {
			return false
		}
		minHi = math.Min(minHi, v(x))
	}
	for _, x := range lo {
		if math.IsNaN(v(x)) {
			return false
		}
		maxLo = math.Max(maxLo, v(x))
	}
	return minHi >= maxLo+by && minHi >= maxLo*factor
}

func all(f []RunFacts, ok func(RunFacts) bool) bool {
	for _, x := range f {
		if !ok(x) {
			return false
		}
	}
	return len(f) > 0
}

func filter(f []RunFacts, ok func(RunFacts) bool) []RunFacts {
	var out []RunFacts
	for _, x := range f {
		if ok(x) {
			out = append(out, x)
		}
	}
	return out
}

// reps lists the repetitions' numbers in order: "2", "1, 3 and 4".
func reps(f []RunFacts) string {
	n := make([]int, len(f))
	for i, x := range f {
		n[i] = x.Rep
	}
	slices.Sort(n)
	s := make([]string, len(n))
	for i, v := range n {
		s[i] = fmt.Sprint(v)
	}
	return join(s)
}

// spanOf renders the range of a value over f: "3.2" or "1.1–2.4"; format
// is a Printf verb, "size" for bytes, "" for stats.Format.
func spanOf(f []RunFacts, v func(RunFacts) float64, format string) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range f {
		lo, hi = math.Min(lo, v(x)), math.Max(hi, v(x))
	}
	r := func(x float64) string {
		switch format {
		case "":
			return stats.Format(x)
		case "size":
			return HumanSize(x)
		}
		return fmt.Sprintf(format, x)
	}
	if r(lo) == r(hi) {
		return r(lo)
	}
	return r(lo) + "–" + r(hi)
}

func spanPct(f []RunFacts, v func(RunFacts) float64) string {
	return spanOf(f, func(x RunFacts) float64 { return math.Round(100 * v(x)) }, "%.0f") + "%"
}

// recorded lists the conditions that were recorded, for the sentence that
// says none of them explains a range.
func recorded(f []RunFacts) string {
	var parts []string
	if !math.IsNaN(f[0].Load) {
		parts = append(parts, "load average "+spanOf(f, func(x RunFacts) float64 { return x.Load }, "%.1f"))
	}
	if !math.IsNaN(f[0].OtherCPU) {
		parts = append(parts, "other processes' CPU "+spanOf(f, func(x RunFacts) float64 { return x.OtherCPU }, "%.2f")+" cores")
	}
	if !math.IsNaN(f[0].Dirty) {
		parts = append(parts, "unwritten page cache "+spanOf(f, func(x RunFacts) float64 { return x.Dirty }, "size"))
	}
	if !math.IsNaN(f[0].CacheResident) {
		parts = append(parts, "log cached "+spanPct(f, func(x RunFacts) float64 { return x.CacheResident }))
	}
	if f[0].Kind != "" {
		parts = append(parts, "phases: "+kinds(f))
	}
	if len(parts) == 0 {
		return "nothing recorded"
	}
	return strings.Join(parts, ", ")
}

func kinds(f []RunFacts) string {
	var ks []string
	for _, x := range f {
		if !slices.Contains(ks, x.Kind) {
			ks = append(ks, x.Kind)
		}
	}
	return strings.Join(ks, " / ")
}

// writeRanges lists every configuration whose repetitions span more than
// WideRange, each with its explanation.
func writeRanges(w Printf, set *results.Set, c Context) {
	lim, _, _ := limitsOf(c)
	groups := groupRuns(set, results.Run.OK)
	var lines []string
	for _, g := range groups {
		perMsg := bytesPerMessage(set, g.runs[0])
		if e := ExplainRange(factsOf(set, g.runs, lim), lim.DiskWrite, perMsg, c.Machine.Cores); e != "" {
			lines = append(lines, fmt.Sprintf("- **%s, %s, %s, %s:** %s", names[g.key.System], g.key.Experiment, g.key.Variant, g.key.Phase, e))
		}
	}
	w("## Ranges wider than %s×\n\n", wideRange)
	if len(lines) == 0 {
		w("No configuration's repetitions spanned more than %s× (max/min).\n\n", wideRange)
		return
	}
	w("Each configuration whose repetitions spanned more than %s× (max/min), with what the harness recorded that separates its slow runs from its fast ones (the runs are divided at the widest gap between their rates).\n\n", wideRange)
	w("%s\n\n", strings.Join(lines, "\n"))
}

// runGroup is the runs of one configuration.
type runGroup struct {
	key  results.Key
	runs []results.Run
}

// groupRuns groups the runs of set that keep accepts by configuration, in
// the order in which each configuration first appears.
func groupRuns(set *results.Set, keep func(results.Run) bool) []runGroup {
	var groups []runGroup
	index := map[results.Key]int{}
	for _, r := range set.Runs {
		if !keep(r) {
			continue
		}
		i, ok := index[r.Key]
		if !ok {
			i = len(groups)
			index[r.Key] = i
			groups = append(groups, runGroup{key: r.Key})
		}
		groups[i].runs = append(groups[i].runs, r)
	}
	return groups
}
