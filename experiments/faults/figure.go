package faults

import (
	"fmt"
	"image/color"
	"os"

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
		pl.Legend.Add(fmt.Sprintf("%s broker%d", w.Kind, w.Broker), poly)
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
