package faults

import (
	"fmt"
	"image/color"
	"math"
	"os"

	"github.com/netdb11/kafka/experiments/faults/check"
	"github.com/netdb11/kafka/experiments/figures"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// SaveTimeline draws a trial's throughput over time with its fault windows
// shaded, as Jepsen's plots do, into a PNG at path.
func SaveTimeline(path string, r *TrialResult) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("faults: drawing %s: %v", path, p)
		}
	}()
	pl := plot.New()
	pl.Title.Text = fmt.Sprintf("%s, %s, seed %d", r.Config.Nemesis, r.Config.Setup, r.Config.Seed)
	pl.X.Label.Text = "time (s)"
	what := "acknowledged"
	if r.Config.Setup == AckNone {
		what = "sent"
	}
	pl.Y.Label.Text = what + " messages/s"
	top := 1.0
	for _, v := range r.Rate {
		top = max(top, v)
	}
	top *= 1.4 // room for the legend
	for _, w := range r.Windows {
		x0, x1 := w.Start.Seconds(), w.End.Seconds()
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x1, Y: 0}, {X: x1, Y: top}, {X: x0, Y: top}})
		if err != nil {
			return err
		}
		poly.Color = color.RGBA{255, 222, 173, 255}
		poly.LineStyle.Color = color.RGBA{230, 159, 0, 255}
		poly.LineStyle.Width = vg.Points(0.5)
		pl.Add(poly)
		pl.Legend.Add(w.Name(), poly)
	}
	pts := make(plotter.XYs, len(r.Rate))
	for i, v := range r.Rate {
		pts[i] = plotter.XY{X: (float64(i) + 0.5) * r.Bin.Seconds(), Y: v}
	}
	line, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	line.Color = color.RGBA{0, 114, 178, 255}
	line.Width = vg.Points(1.5)
	pl.Add(line)
	pl.Legend.Add(what, line)
	pl.Legend.Top = true
	pl.X.Min, pl.Y.Min, pl.Y.Max = 0, 0, top
	pl.X.Tick.Marker, pl.Y.Tick.Marker = figures.HumanTicks{}, figures.HumanTicks{}
	return savePNG(path, pl, 16*vg.Centimeter, 8*vg.Centimeter)
}

// savePNG draws pl on a w by h canvas at 110 dpi and writes it to path as
// a PNG.
func savePNG(path string, pl *plot.Plot, w, h vg.Length) error {
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110))
	pl.Draw(draw.New(img))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// invalidGrey fills a matrix square whose every trial was invalid: darker
// than the light grey of a pair not run.
var invalidGrey = color.RGBA{160, 160, 160, 255}

// SaveMatrix draws the safety matrix at a glance into a PNG at path: a
// square per configuration (row) and nemesis (column), green where no
// finished trial found an anomaly, red where some did (the deeper, the
// larger the share of finished trials), dark grey where every trial was
// invalid (its final reads did not finish: nothing is known), light grey
// where the pair was not run ("n/a" where the nemesis needs the replication
// layer); each square names its trials with an anomaly out of its finished
// trials, the largest count (lost first) and how many trials were invalid.
func SaveMatrix(path string, recs []CellRecord) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("faults: drawing %s: %v", path, p)
		}
	}()
	var setups, nemeses []string
	byKey := map[[2]string]CellRecord{}
	for _, r := range recs {
		byKey[r.key()] = r
	}
	for _, a := range SetupNames {
		for _, r := range recs {
			if r.Setup == a {
				setups = append(setups, a)
				break
			}
		}
	}
	for _, n := range Nemeses {
		for _, r := range recs {
			if r.Nemesis == n {
				nemeses = append(nemeses, n)
				break
			}
		}
	}
	if len(setups) == 0 {
		return fmt.Errorf("faults: drawing %s: no cells", path)
	}
	pl := plot.New()
	pl.Title.Text = "Trials with an anomaly, per configuration and nemesis"
	var labels plotter.XYLabels
	for i, a := range setups {
		y := float64(len(setups) - 1 - i)
		for j, n := range nemeses {
			x := float64(j)
			r, ok := byKey[[2]string{n, a}]
			fill, text := color.Color(color.RGBA{235, 235, 235, 255}), "not run"
			if !applies(a, n) {
				text = "n/a"
			}
			finished := r.Trials - r.Invalid
			switch {
			case ok && r.Trials > 0 && finished <= 0:
				// Every trial invalid: nothing is known of the cell.
				fill, text = invalidGrey, fmt.Sprintf("%d invalid", r.Invalid)
			case ok && r.Trials > 0:
				text = fmt.Sprintf("%d/%d", r.WithAnomalies, finished)
				fill = color.RGBA{199, 233, 192, 255}
				if r.WithAnomalies > 0 {
					share := float64(r.WithAnomalies) / float64(finished)
					fill = color.RGBA{uint8(250 - 35*share), uint8(190 - 150*share), uint8(180 - 150*share), 255}
					if kind, n := largestAnomaly(r.Counts); n > 0 {
						text += fmt.Sprintf("\n%d %s", n, kind)
					}
				}
				if r.Invalid > 0 {
					text += fmt.Sprintf("\n+%d invalid", r.Invalid)
				}
			}
			sq, err := plotter.NewPolygon(plotter.XYs{{X: x - 0.48, Y: y - 0.48}, {X: x + 0.48, Y: y - 0.48}, {X: x + 0.48, Y: y + 0.48}, {X: x - 0.48, Y: y + 0.48}})
			if err != nil {
				return err
			}
			sq.Color = fill
			sq.LineStyle.Width = 0
			pl.Add(sq)
			labels.XYs = append(labels.XYs, plotter.XY{X: x, Y: y})
			labels.Labels = append(labels.Labels, text)
		}
	}
	ls, err := plotter.NewLabels(labels)
	if err != nil {
		return err
	}
	for i := range ls.TextStyle {
		ls.TextStyle[i].XAlign, ls.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
		ls.TextStyle[i].Font.Size = vg.Points(7)
	}
	pl.Add(ls)
	var xt, yt []plot.Tick
	for j, n := range nemeses {
		xt = append(xt, plot.Tick{Value: float64(j), Label: n})
	}
	for i, a := range setups {
		if !Setups[a].Replicated() {
			a += " (2011)"
		}
		yt = append(yt, plot.Tick{Value: float64(len(setups) - 1 - i), Label: a})
	}
	pl.X.Tick.Marker, pl.Y.Tick.Marker = plot.ConstantTicks(xt), plot.ConstantTicks(yt)
	pl.X.Tick.Label.Rotation = math.Pi / 4
	pl.X.Tick.Label.XAlign, pl.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	pl.X.Min, pl.X.Max = -0.5, float64(len(nemeses))-0.5
	pl.Y.Min, pl.Y.Max = -0.5, float64(len(setups))-0.5
	pl.X.Padding, pl.Y.Padding = 0, 0
	return savePNG(path, pl, vg.Length(2+1.5*float64(len(nemeses)))*vg.Centimeter, vg.Length(4+1.2*float64(len(setups)))*vg.Centimeter)
}

// largestAnomaly is the kind with the largest count, lost winning ties.
func largestAnomaly(counts map[string]int) (string, int) {
	kind, most := check.Lost, counts[check.Lost]
	if most > 0 {
		return kind, most
	}
	for _, k := range check.Kinds {
		if counts[k] > most {
			kind, most = k, counts[k]
		}
	}
	return kind, most
}
