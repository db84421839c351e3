package stats

import "math"

// Point is a cumulative count N (messages, bytes) reached at time T
// (seconds): one sample of a run's progress.
type Point struct {
	T, N float64
}

// Split is a run's progress divided at its knee: the moment its rate fell
// and stayed lower, as a producer's does when the page cache stops absorbing
// its writes and the disk sets the pace (issue 14: burst, then sustained).
type Split struct {
	// Knee reports whether the run has a knee. Without one, Before and After
	// are both the rate of a single line fitted to the whole run.
	Knee bool
	// KneeT is the time of the knee (seconds) and KneeN the count reached
	// by then (on the fitted curve).
	KneeT, KneeN float64
	// Before and After are the rates (count per second) before and after
	// the knee: the slopes of the two fitted segments.
	Before, After float64
	// Start and End bound the samples fitted (leading samples before the
	// first progress and trailing ones after the last are left out).
	Start, End float64
	// Gain is the share of a single line's squared error that the two
	// segments remove (0: no better than one line, 1: a perfect fit).
	Gain float64
}

// KneeOptions are FindKnee's thresholds; zero fields take the defaults.
type KneeOptions struct {
	// MinDrop is how much lower the rate after the knee must be, as a
	// fraction of the rate before it (default 0.2: at least 20% lower).
	MinDrop float64
	// MinGain is the least share of a single line's squared error the two
	// segments must remove (default 0.5).
	MinGain float64
	// MinPoints is the least number of samples in each segment (default 4).
	MinPoints int
	// MinShare is the least share of the run's duration in each segment
	// (default 0.1).
	MinShare float64
}

func (o KneeOptions) withDefaults() KneeOptions {
	if o.MinDrop <= 0 {
		o.MinDrop = 0.2
	}
	if o.MinGain <= 0 {
		o.MinGain = 0.5
	}
	if o.MinPoints <= 0 {
		o.MinPoints = 4
	}
	if o.MinShare <= 0 {
		o.MinShare = 0.1
	}
	return o
}

// FindKnee finds where a run's rate fell, from its cumulative progress
// samples in time order.
//
// Method: the cumulative curve is smooth where per-interval rates are noisy,
// so it is fitted, by least squares, with two straight segments that meet at
// a sample (a continuous piecewise-linear fit: N = a + r1·min(t, tk) +
// r2·max(t−tk, 0)), trying every sample as the knee tk and keeping the best.
// The knee is accepted only when the segments explain the curve clearly
// better than one line (Gain ≥ MinGain), the later slope is at least MinDrop
// lower than the earlier one, and each segment holds MinPoints samples and
// MinShare of the run's duration; otherwise the run is one phase. Samples
// before the first progress (process start, connecting) and after the last
// (the driver's exit) are left out.
func FindKnee(pts []Point, opt KneeOptions) Split {
	opt = opt.withDefaults()
	pts = trimIdle(pts)
	if len(pts) < 2 {
		return Split{}
	}
	// Fit counts scaled to about 1, so that the normal equations stay well
	// conditioned for runs of billions of bytes; rates are scaled back.
	scale := math.Max(math.Abs(pts[len(pts)-1].N), 1)
	scaled := make([]Point, len(pts))
	for i, p := range pts {
		scaled[i] = Point{T: p.T, N: p.N / scale}
	}
	pts = scaled
	start, end := pts[0].T, pts[len(pts)-1].T
	a, r := fitLine(pts)
	s := Split{Before: r * scale, After: r * scale, Start: start, End: end}
	sse1 := 0.0
	for _, p := range pts {
		d := p.N - (a + r*p.T)
		sse1 += d * d
	}
	if sse1 == 0 || end <= start {
		return s
	}
	best, bestK := math.Inf(1), -1
	var bestA, bestR1, bestR2 float64
	for k := opt.MinPoints - 1; k <= len(pts)-opt.MinPoints; k++ {
		tk := pts[k].T
		if (tk-start) < opt.MinShare*(end-start) || (end-tk) < opt.MinShare*(end-start) {
			continue
		}
		a, r1, r2, ok := fitHinge(pts, tk)
		if !ok {
			continue
		}
		sse := 0.0
		for _, p := range pts {
			d := p.N - (a + r1*math.Min(p.T, tk) + r2*math.Max(p.T-tk, 0))
			sse += d * d
		}
		if sse < best {
			best, bestK, bestA, bestR1, bestR2 = sse, k, a, r1, r2
		}
	}
	if bestK < 0 {
		return s
	}
	gain := 1 - best/sse1
	s.Gain = gain
	if gain < opt.MinGain || bestR1 <= 0 || bestR2 > (1-opt.MinDrop)*bestR1 {
		return s
	}
	tk := pts[bestK].T
	s.Knee, s.KneeT, s.KneeN, s.Before, s.After = true, tk, (bestA+bestR1*tk)*scale, bestR1*scale, bestR2*scale
	return s
}

// trimIdle drops the samples before the last one without progress at the
// start (keeping it as the run's origin) and those after the first one at the
// final count.
func trimIdle(pts []Point) []Point {
	i := 0
	for i+1 < len(pts) && pts[i+1].N <= pts[0].N {
		i++
	}
	pts = pts[i:]
	j := len(pts) - 1
	for j > 0 && pts[j-1].N >= pts[len(pts)-1].N {
		j--
	}
	return pts[:j+1]
}

// fitLine fits N = a + r·T by least squares.
func fitLine(pts []Point) (a, r float64) {
	var n, st, sn, stt, stn float64
	for _, p := range pts {
		n++
		st += p.T
		sn += p.N
		stt += p.T * p.T
		stn += p.T * p.N
	}
	den := n*stt - st*st
	if den == 0 {
		return sn / n, 0
	}
	r = (n*stn - st*sn) / den
	return (sn - r*st) / n, r
}

// fitHinge fits N = a + r1·min(T, tk) + r2·max(T−tk, 0) by least squares
// (the normal equations of three unknowns, solved by Cramer's rule).
func fitHinge(pts []Point, tk float64) (a, r1, r2 float64, ok bool) {
	var m [3][3]float64
	var v [3]float64
	for _, p := range pts {
		x := [3]float64{1, math.Min(p.T, tk), math.Max(p.T-tk, 0)}
		for i := range 3 {
			for j := range 3 {
				m[i][j] += x[i] * x[j]
			}
			v[i] += x[i] * p.N
		}
	}
	det := det3(m)
	if math.Abs(det) < 1e-12 {
		return 0, 0, 0, false
	}
	var sol [3]float64
	for c := range 3 {
		mc := m
		for i := range 3 {
			mc[i][c] = v[i]
		}
		sol[c] = det3(mc) / det
	}
	return sol[0], sol[1], sol[2], true
}

func det3(m [3][3]float64) float64 {
	return m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) -
		m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) +
		m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
}
