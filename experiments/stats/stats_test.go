package stats

import (
	"math"
	"testing"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want Summary
	}{
		{"empty", nil, Summary{}},
		{"one", []float64{5}, Summary{N: 1, Median: 5, Min: 5, Max: 5, Mean: 5}},
		{"odd unsorted", []float64{3, 1, 2}, Summary{N: 3, Median: 2, Min: 1, Max: 3, Mean: 2, Stddev: 1}},
		{"even", []float64{4, 1, 3, 2}, Summary{N: 4, Median: 2.5, Min: 1, Max: 4, Mean: 2.5, Stddev: math.Sqrt(5.0 / 3)}},
		{"nan ignored", []float64{math.NaN(), 10, 20}, Summary{N: 2, Median: 15, Min: 10, Max: 20, Mean: 15, Stddev: math.Sqrt(50)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.in)
			if got.N != tt.want.N || !near(got.Median, tt.want.Median) || !near(got.Min, tt.want.Min) ||
				!near(got.Max, tt.want.Max) || !near(got.Mean, tt.want.Mean) || !near(got.Stddev, tt.want.Stddev) {
				t.Errorf("Summarize(%v) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestSummarizeDoesNotReorderInput(t *testing.T) {
	in := []float64{3, 1, 2}
	Summarize(in)
	if in[0] != 3 || in[1] != 1 || in[2] != 2 {
		t.Errorf("input reordered to %v", in)
	}
}

func TestRelSpreadAndOverlap(t *testing.T) {
	a := Summarize([]float64{90, 100, 110})
	if got := a.RelSpread(); !near(got, 0.2) {
		t.Errorf("RelSpread = %v, want 0.2", got)
	}
	b := Summarize([]float64{105, 120, 130})
	c := Summarize([]float64{200, 210, 220})
	if !a.Overlaps(b) || !b.Overlaps(a) {
		t.Error("ranges [90,110] and [105,130] should overlap")
	}
	if a.Overlaps(c) {
		t.Error("ranges [90,110] and [200,220] should not overlap")
	}
	if a.Overlaps(Summary{}) {
		t.Error("an empty summary overlaps nothing")
	}
	if got := (Summary{}).RelSpread(); got != 0 {
		t.Errorf("empty RelSpread = %v", got)
	}
}

func TestDivide(t *testing.T) {
	a := Summarize([]float64{100, 200, 300})
	b := Summarize([]float64{10, 20, 40})
	r := Divide(a, b)
	if !near(r.Median, 10) || !near(r.Low, 2.5) || !near(r.High, 30) {
		t.Errorf("Divide = %+v, want median 10, low 2.5, high 30", r)
	}
	if e := Divide(a, Summary{}); !math.IsNaN(e.Median) || !math.IsNaN(e.High) {
		t.Errorf("Divide by an empty summary = %+v, want NaN", e)
	}
	z := Divide(a, Summary{N: 1})
	if !math.IsNaN(z.Median) || !math.IsNaN(z.Low) {
		t.Errorf("Divide by zero = %+v, want NaN", z)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{1234567, "1,234,567"},
		{-1234567, "-1,234,567"},
		{1000, "1,000"},
		{999.6, "1000"},
		{123.4, "123"},
		{12.345, "12.3"},
		{1.234, "1.23"},
		{0.01234, "0.0123"},
		{math.NaN(), "n/a"},
		{math.Inf(1), "inf"},
	}
	for _, tt := range tests {
		if got := Format(tt.in); got != tt.want {
			t.Errorf("Format(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSummaryString(t *testing.T) {
	got := Summarize([]float64{1000, 2000, 3000}).String()
	if want := "2,000 [1,000–3,000] (n=3)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got := (Summary{}).String(); got != "n/a" {
		t.Errorf("empty String = %q", got)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
