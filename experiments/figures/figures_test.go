package figures

import (
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// outDir is where test figures go: FIGURES_OUT to look at them, else a temp dir.
func outDir(t *testing.T) string {
	if d := os.Getenv("FIGURES_OUT"); d != "" {
		return d
	}
	return t.TempDir()
}

func checkPNG(t *testing.T, path string, minWidth int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", path, err)
	}
	if w := img.Bounds().Dx(); w < minWidth {
		t.Errorf("%s is %d px wide, want >= %d", path, w, minWidth)
	}
	// A drawn figure has more than one colour.
	first := img.At(0, 0)
	varied := false
	for y := 0; y < img.Bounds().Dy() && !varied; y += 7 {
		for x := 0; x < img.Bounds().Dx(); x += 7 {
			if img.At(x, y) != first {
				varied = true
				break
			}
		}
	}
	if !varied {
		t.Errorf("%s is blank", path)
	}
}

func TestLinesLogY(t *testing.T) {
	path := filepath.Join(outDir(t), "lines.png")
	f := Figure{Panels: []Panel{{
		Title: "Producer throughput", XLabel: "time (s)", YLabel: "messages/s", LogY: true,
		Lines: []Series{
			{Name: "kafka", X: []float64{0.1, 0.2, 0.3}, Y: []float64{1e6, 1.1e6, 0}}, // 0 dropped on a log axis
			{Name: "activemq", X: []float64{0.1, 0.2, 0.3}, Y: []float64{1e4, math.NaN(), 1.2e4},
				YLow: []float64{9e3, 0, 1e4}, YHigh: []float64{1.1e4, 0, 1.3e4}},
		},
	}}}
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, path, 500)
}

func TestGroupedBarsTwoPanels(t *testing.T) {
	path := filepath.Join(outDir(t), "bars.png")
	cats := []string{"kafka", "activemq", "rabbitmq"}
	f := Figure{Panels: []Panel{
		{Title: "Storage", YLabel: "bytes/message", Categories: cats, HLine: 200, HLineLabel: "payload",
			Bars: []BarSeries{{Name: "total", Bars: []Bar{{"kafka", 210, 209, 211}, {"activemq", 700, 650, 760}, {"rabbitmq", 400, math.NaN(), math.NaN()}}}}},
		{Title: "Throughput", YLabel: "messages/s", LogY: true, Categories: cats,
			Bars: []BarSeries{
				{Name: "batch 1", Bars: []Bar{{"kafka", 2e5, 1.8e5, 2.2e5}, {"activemq", 1e4, 9e3, 1.1e4}}},
				{Name: "batch 50", Bars: []Bar{{"kafka", 2e6, 1.9e6, 2.1e6}, {"unknown", 5, 5, 5}}},
			}},
	}}
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, path, 1000)
}

func TestEmpty(t *testing.T) {
	dir := t.TempDir()
	for name, f := range map[string]Figure{
		"no panels": {},
		"no data":   {Panels: []Panel{{Title: "x", Lines: []Series{{Name: "a"}}}}},
		"all bad":   {Panels: []Panel{{Title: "x", LogY: true, Lines: []Series{{Name: "a", X: []float64{1}, Y: []float64{-1}}}}}},
	} {
		path := filepath.Join(dir, "empty.png")
		if err := f.Save(path); !errors.Is(err, ErrEmpty) {
			t.Errorf("%s: Save = %v, want ErrEmpty", name, err)
		}
	}
}

func TestHuman(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 500: "500", 5000: "5000", 20000: "20k", 1.5e6: "1.5M"} {
		if got := human(in); got != want {
			t.Errorf("human(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestEmptyLogPanelBesideData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "half.png")
	f := Figure{Panels: []Panel{
		{Title: "no data", LogY: true, LogX: true, Lines: []Series{{Name: "a", X: []float64{1}, Y: []float64{0}}}},
		{Title: "data", LogY: true, Categories: []string{"x"}, Bars: []BarSeries{{Bars: []Bar{{"x", 5, 4, 6}}}}},
	}}
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, path, 500)
}

// TestHumanTicks: labels without needless decimals or with k/M, where
// gonum's own would print "0.00" and "25.00" for a 26-second timeline.
func TestHumanTicks(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var ls []string
		for _, tk := range (HumanTicks{}).Ticks(lo, hi) {
			if tk.Label != "" {
				ls = append(ls, tk.Label)
			}
		}
		return ls
	}
	for _, c := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 25.8, []string{"0", "25"}},
		{0, 41.5, []string{"0", "20", "40"}},
		{0, 50000, []string{"0", "25k", "50k"}},
	} {
		if got := labels(c.lo, c.hi); !slices.Equal(got, c.want) {
			t.Errorf("HumanTicks(%v, %v) labels = %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}
