package faults

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/netdb11/kafka/experiments/faults/check"
)

// reddish counts the pixels of the figure at path that are clearly red
// (the colour of a cell with anomalies) and clearly green (a clean cell).
func reddish(t *testing.T, path string) (red, green int) {
	t.Helper()
	img := decodePNG(t, path)
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			switch {
			case r > 200 && g < 150 && bl < 150:
				red++
			case g > 200 && r < 210 && bl < 200 && g > r+20:
				green++
			}
		}
	}
	return red, green
}

// decodePNG reads the PNG at path.
func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// countColor counts the pixels of the PNG at path that are exactly c.
func countColor(t *testing.T, path string, c color.RGBA) int {
	t.Helper()
	img := decodePNG(t, path)
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if uint8(r>>8) == c.R && uint8(g>>8) == c.G && uint8(bl>>8) == c.B {
				n++
			}
		}
	}
	return n
}

func TestSaveMatrix(t *testing.T) {
	clean := CellRecord{Nemesis: Kill, Setup: "safe", Trials: 10, Counts: map[string]int{}}
	lossy := CellRecord{Nemesis: IsolateKill, Setup: "unclean", Trials: 10, WithAnomalies: 10, Counts: map[string]int{check.Lost: 3170, check.Inconsistent: 500}}
	dir := t.TempDir()

	onlyClean := filepath.Join(dir, "clean.png")
	if err := SaveMatrix(onlyClean, []CellRecord{clean}); err != nil {
		t.Fatal(err)
	}
	if red, green := reddish(t, onlyClean); red != 0 || green == 0 {
		t.Errorf("a clean matrix: %d red and %d green pixels; want none red, some green", red, green)
	}

	both := filepath.Join(dir, "both.png")
	if err := SaveMatrix(both, []CellRecord{clean, lossy}); err != nil {
		t.Fatal(err)
	}
	if red, green := reddish(t, both); red == 0 || green == 0 {
		t.Errorf("a matrix with a lossy cell: %d red and %d green pixels; want some of each", red, green)
	}

	// A cell whose every trial was invalid is dark grey, neither red nor
	// green; one with some finished trials is coloured by those.
	invalid := CellRecord{Nemesis: Pause, Setup: "safe", Trials: 3, Invalid: 3, Counts: map[string]int{}}
	onlyInvalid := filepath.Join(dir, "invalid.png")
	if err := SaveMatrix(onlyInvalid, []CellRecord{invalid}); err != nil {
		t.Fatal(err)
	}
	if red, green := reddish(t, onlyInvalid); red != 0 || green != 0 {
		t.Errorf("an all-invalid matrix: %d red and %d green pixels; want none", red, green)
	}
	if n := countColor(t, onlyInvalid, invalidGrey); n == 0 {
		t.Error("an all-invalid matrix has no square of the invalid grey")
	}
	partly := CellRecord{Nemesis: Pause, Setup: "safe", Trials: 3, Invalid: 1, Counts: map[string]int{}}
	if err := SaveMatrix(onlyInvalid, []CellRecord{partly}); err != nil {
		t.Fatal(err)
	}
	if _, green := reddish(t, onlyInvalid); green == 0 {
		t.Error("a cell with two clean finished trials and one invalid is not green")
	}

	if err := SaveMatrix(filepath.Join(dir, "none.png"), nil); err == nil {
		t.Error("SaveMatrix with no cells: no error")
	}
}

func TestLargestAnomaly(t *testing.T) {
	for _, tc := range []struct {
		counts map[string]int
		kind   string
		n      int
	}{
		{map[string]int{check.Lost: 1, check.Inconsistent: 500}, check.Lost, 1},
		{map[string]int{check.Reordered: 210}, check.Reordered, 210},
		{map[string]int{check.Inconsistent: 5, check.Diverged: 13}, check.Diverged, 13},
		{map[string]int{}, check.Lost, 0},
	} {
		if kind, n := largestAnomaly(tc.counts); kind != tc.kind || n != tc.n {
			t.Errorf("largestAnomaly(%v) = %s %d; want %s %d", tc.counts, kind, n, tc.kind, tc.n)
		}
	}
}
