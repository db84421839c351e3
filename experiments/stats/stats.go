// Package stats summarises repeated measurements: every configuration of the
// experiments runs at least three times, and the report gives the median and the
// spread (minimum to maximum) rather than a single number.
package stats

import (
	"fmt"
	"math"
	"slices"
)

// Summary describes a set of repeated measurements of one quantity.
type Summary struct {
	// N is the number of measurements.
	N int
	// Median is the middle value (the mean of the two middle values for even N).
	Median float64
	// Min and Max bound the measurements.
	Min, Max float64
	// Mean is the arithmetic mean.
	Mean float64
	// Stddev is the sample standard deviation (0 when N < 2).
	Stddev float64
}

// Summarize computes the Summary of xs, ignoring NaNs. It returns the zero Summary
// for no values.
func Summarize(xs []float64) Summary {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return Summary{}
	}
	slices.Sort(v)
	s := Summary{N: len(v), Min: v[0], Max: v[len(v)-1]}
	if len(v)%2 == 1 {
		s.Median = v[len(v)/2]
	} else {
		s.Median = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	s.Mean = sum / float64(len(v))
	if len(v) > 1 {
		ss := 0.0
		for _, x := range v {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.Stddev = math.Sqrt(ss / float64(len(v)-1))
	}
	return s
}

// RelSpread is (Max-Min)/Median: the spread as a fraction of the median, 0 when the
// median is 0.
func (s Summary) RelSpread() float64 {
	if s.Median == 0 {
		return 0
	}
	return (s.Max - s.Min) / math.Abs(s.Median)
}

// Overlaps reports whether the ranges [Min, Max] of s and o intersect: two
// configurations whose runs overlap are not distinguishable by these runs.
func (s Summary) Overlaps(o Summary) bool {
	return s.N > 0 && o.N > 0 && s.Min <= o.Max && o.Min <= s.Max
}

// Ratio is a/b with the range of the ratio implied by the spreads: from a.Min/b.Max
// to a.Max/b.Min. Ratios with a zero denominator are NaN.
type Ratio struct {
	// Median is a.Median / b.Median.
	Median float64
	// Low and High bound the ratio over the measured ranges.
	Low, High float64
}

// Divide returns the Ratio of two summaries; it is NaN when either is empty.
func Divide(a, b Summary) Ratio {
	if a.N == 0 || b.N == 0 {
		return Ratio{Median: math.NaN(), Low: math.NaN(), High: math.NaN()}
	}
	div := func(x, y float64) float64 {
		if y == 0 {
			return math.NaN()
		}
		return x / y
	}
	return Ratio{Median: div(a.Median, b.Median), Low: div(a.Min, b.Max), High: div(a.Max, b.Min)}
}

// Format renders a value with a precision that suits its magnitude and thousands
// separators: 1234567 -> "1,234,567", 12.345 -> "12.3", 0.01234 -> "0.0123".
func Format(x float64) string {
	switch {
	case math.IsNaN(x):
		return "n/a"
	case math.IsInf(x, 0):
		return "inf"
	}
	a := math.Abs(x)
	switch {
	case a >= 1000:
		return groupThousands(fmt.Sprintf("%.0f", x))
	case a >= 100:
		return fmt.Sprintf("%.0f", x)
	case a >= 10:
		return fmt.Sprintf("%.1f", x)
	case a >= 1:
		return fmt.Sprintf("%.2f", x)
	case a == 0:
		return "0"
	default:
		return fmt.Sprintf("%.3g", x)
	}
}

func groupThousands(s string) string {
	neg := ""
	if s[0] == '-' {
		neg, s = "-", s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return neg + string(out)
}

// String renders the summary as "median [min–max] (n=N)".
func (s Summary) String() string {
	if s.N == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%s [%s–%s] (n=%d)", Format(s.Median), Format(s.Min), Format(s.Max), s.N)
}
