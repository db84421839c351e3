package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// series samples a run every dt seconds for total seconds: nothing moves
// before idle seconds, then the rate is rate(t) (t since the start of
// progress), with a fixed-seed multiplicative noise of ±noise per interval,
// and the count stays at its final value for tail more samples.
func series(dt, idle, total float64, rate func(t float64) float64, noise float64, tail int) []Point {
	rng := rand.New(rand.NewPCG(1, 2))
	var pts []Point
	n := 0.0
	for t := dt; t <= total+1e-9; t += dt {
		if t > idle {
			n += rate(t-idle) * dt * (1 + noise*(2*rng.Float64()-1))
		}
		pts = append(pts, Point{T: t, N: math.Round(n)})
	}
	last := pts[len(pts)-1]
	for i := 1; i <= tail; i++ {
		pts = append(pts, Point{T: last.T + float64(i)*dt, N: last.N})
	}
	return pts
}

func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

func TestFindKneeBurstThenSustained(t *testing.T) {
	// 3.5M msg/s for 2 s while the page cache absorbs the writes, then the
	// disk's 1.4M msg/s for 4 s: the producer.
	pts := series(0.1, 0.3, 6.3, func(t float64) float64 {
		if t < 2 {
			return 3.5e6
		}
		return 1.4e6
	}, 0.1, 3)
	s := FindKnee(pts, KneeOptions{})
	if !s.Knee {
		t.Fatalf("no knee found: %+v", s)
	}
	if math.Abs(s.KneeT-2.3) > 0.15 {
		t.Errorf("knee at %.2f s, want about 2.3 s (2 s after progress began at 0.3 s)", s.KneeT)
	}
	if !within(s.Before, 3.5e6, 0.05) || !within(s.After, 1.4e6, 0.05) {
		t.Errorf("rates %.0f before, %.0f after; want about 3.5M and 1.4M", s.Before, s.After)
	}
	if !within(s.KneeN, 7e6, 0.05) {
		t.Errorf("%.0f messages by the knee, want about 7M", s.KneeN)
	}
	if s.Start > 0.31 || s.End > 6.31 {
		t.Errorf("fitted span %.2f..%.2f s, want the idle start and the tail left out", s.Start, s.End)
	}
}

func TestFindKneeNone(t *testing.T) {
	tests := []struct {
		name string
		pts  []Point
	}{
		{"steady with noise", series(0.1, 0.2, 5, func(float64) float64 { return 2e6 }, 0.3, 2)},
		{"slow start, then faster", series(0.1, 0, 5, func(t float64) float64 { return map[bool]float64{true: 1e6, false: 3e6}[t < 1.5] }, 0.05, 0)},
		{"drop in the last 5% only", series(0.1, 0, 10, func(t float64) float64 { return map[bool]float64{true: 3e6, false: 1e6}[t < 9.6] }, 0.02, 0)},
		{"a 10% drop", series(0.1, 0, 6, func(t float64) float64 { return map[bool]float64{true: 2e6, false: 1.8e6}[t < 3] }, 0.02, 0)},
		{"too few samples", []Point{{0.1, 0}, {0.2, 100}, {0.3, 150}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := FindKnee(tt.pts, KneeOptions{})
			if s.Knee {
				t.Errorf("knee found at %.2f s (%+v), want none", s.KneeT, s)
			}
			if s.Before != s.After {
				t.Errorf("without a knee Before %v and After %v should be the one line's rate", s.Before, s.After)
			}
		})
	}
	if s := FindKnee(series(0.1, 0.2, 5, func(float64) float64 { return 2e6 }, 0.3, 2), KneeOptions{}); !within(s.Before, 2e6, 0.05) {
		t.Errorf("steady run's rate %.0f, want about 2M", s.Before)
	}
	for _, pts := range [][]Point{nil, {{1, 5}}, {{1, 0}, {2, 0}, {3, 0}}} {
		if s := FindKnee(pts, KneeOptions{}); s.Knee || s.Before != 0 {
			t.Errorf("FindKnee(%v) = %+v, want the zero Split", pts, s)
		}
	}
}

func TestFindKneeLargeCounts(t *testing.T) {
	// Bytes rather than messages: 4 GB at 2 GB/s, then 300 MB/s.
	pts := series(0.1, 0, 12, func(t float64) float64 {
		if t < 2 {
			return 2e9
		}
		return 3e8
	}, 0.05, 0)
	s := FindKnee(pts, KneeOptions{})
	if !s.Knee || !within(s.Before, 2e9, 0.05) || !within(s.After, 3e8, 0.05) {
		t.Errorf("FindKnee = %+v, want 2e9 then 3e8 at 2 s", s)
	}
}
