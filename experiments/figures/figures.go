// Package figures draws the experiments' PNG figures with gonum.org/v1/plot in the
// paper's forms (§5): throughput over time for the producer and consumer tests,
// bars for per-system comparisons and storage, and lines for parameter sweeps.
// Values the axes cannot show (NaN, or non-positive on a log axis) are left out
// rather than failing the figure.
package figures

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Series is one line of a line panel. YLow and YHigh, when set, give an error
// bar (the spread over repetitions) at each point.
type Series struct {
	Name        string
	X, Y        []float64
	YLow, YHigh []float64
	PointsOnly  bool
}

// Bar is one bar: a median with its spread.
type Bar struct {
	// Category is the label under the bar's group on the X axis.
	Category string
	// Value is the bar's height; Low and High the whiskers (NaN: none).
	Value, Low, High float64
}

// BarSeries is a set of bars of one colour, one per category.
type BarSeries struct {
	Name string
	Bars []Bar
}

// Panel is one plot of a figure: either Lines or Bars.
type Panel struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	Lines                 []Series
	// Categories orders the X axis of a bar panel; Bars are grouped by them.
	Categories []string
	Bars       []BarSeries
	// HLine draws a dashed reference line at this Y (0: none), labelled HLineLabel.
	HLine      float64
	HLineLabel string
}

// Figure is one PNG: panels side by side.
type Figure struct {
	Panels []Panel
	// Width and Height of each panel; defaults 16 cm x 11 cm.
	Width, Height vg.Length
}

// palette is colour-blind-safe (Okabe–Ito).
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},
	color.RGBA{213, 94, 0, 255},
	color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255},
	color.RGBA{230, 159, 0, 255},
	color.RGBA{86, 180, 233, 255},
	color.RGBA{0, 0, 0, 255},
}

// ErrEmpty reports a figure with nothing to draw.
var ErrEmpty = errors.New("figures: nothing to draw")

// Save renders the figure as a PNG file.
func (f Figure) Save(path string) (err error) {
	if len(f.Panels) == 0 {
		return ErrEmpty
	}
	// gonum/plot panics on some degenerate ranges; a figure must never take the
	// experiments down with it.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("figures: drawing %s: %v", path, r)
		}
	}()
	w, h := f.Width, f.Height
	if w == 0 {
		w = 16 * vg.Centimeter
	}
	if h == 0 {
		h = 11 * vg.Centimeter
	}
	plots := [][]*plot.Plot{make([]*plot.Plot, len(f.Panels))}
	drawn := 0
	for i, p := range f.Panels {
		pl, n, err := p.build()
		if err != nil {
			return err
		}
		plots[0][i] = pl
		drawn += n
	}
	if drawn == 0 {
		return ErrEmpty
	}
	img := vgimg.NewWith(vgimg.UseWH(w*vg.Length(len(f.Panels)), h), vgimg.UseDPI(110))
	dc := draw.New(img)
	canvases := plot.Align(plots, draw.Tiles{Rows: 1, Cols: len(f.Panels), PadX: vg.Centimeter,
		PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}, dc)
	for i, pl := range plots[0] {
		pl.Draw(canvases[0][i])
	}
	file, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("figures: %w", err)
	}
	defer func() {
		if cerr := file.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("figures: closing %s: %w", path, cerr)
		}
	}()
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(file); err != nil {
		return fmt.Errorf("figures: writing %s: %w", path, err)
	}
	return file.Sync()
}

// build makes one gonum plot and returns how many data items it drew.
func (p Panel) build() (*plot.Plot, int, error) {
	pl := plot.New()
	pl.Title.Text = p.Title
	pl.X.Label.Text = p.XLabel
	pl.Y.Label.Text = p.YLabel
	pl.Legend.Top = true
	pl.Add(plotter.NewGrid())
	if p.LogY {
		pl.Y.Scale = plot.LogScale{}
		pl.Y.Tick.Marker = humanLogTicks{}
	} else {
		pl.Y.Tick.Marker = HumanTicks{}
	}
	if p.LogX {
		pl.X.Scale = plot.LogScale{}
		pl.X.Tick.Marker = humanLogTicks{}
	}
	var n int
	var err error
	if len(p.Bars) > 0 {
		n, err = p.addBars(pl)
	} else {
		n, err = p.addLines(pl)
	}
	if err != nil {
		return nil, 0, err
	}
	if p.HLine != 0 && (!p.LogY || p.HLine > 0) {
		xmin, xmax := pl.X.Min, pl.X.Max
		if len(p.Bars) > 0 {
			xmin, xmax = -0.5, float64(len(p.Categories))-0.5
		}
		l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: p.HLine}, {X: xmax, Y: p.HLine}})
		if err != nil {
			return nil, 0, fmt.Errorf("figures: %w", err)
		}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		l.Color = color.Gray{Y: 90}
		pl.Add(l)
		if p.HLineLabel != "" {
			pl.Legend.Add(p.HLineLabel, l)
		}
	}
	switch {
	case n == 0:
		// An empty panel of a figure with data elsewhere: a log axis would
		// have no positive range, so it stays linear.
		pl.X.Scale, pl.Y.Scale = plot.LinearScale{}, plot.LinearScale{}
		pl.X.Tick.Marker, pl.Y.Tick.Marker = HumanTicks{}, HumanTicks{}
	case p.LogY:
		// Log axes need positive bounds; pad them by a little.
		pl.Y.Min, pl.Y.Max = pl.Y.Min/1.5, pl.Y.Max*1.5
	default:
		// A linear axis starts at zero, so heights compare honestly.
		pl.Y.Min = math.Min(0, pl.Y.Min)
		pl.Y.Max *= 1.12 // room for the legend
	}
	return pl, n, nil
}

func (p Panel) ok(x, y float64) bool {
	if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
		return false
	}
	return (!p.LogX || x > 0) && (!p.LogY || y > 0)
}

func (p Panel) addLines(pl *plot.Plot) (int, error) {
	n := 0
	for i, s := range p.Lines {
		// Points the axes cannot show (a zero rate on a log axis) break the
		// line into segments rather than being bridged by it.
		var segs []plotter.XYs
		var cur plotter.XYs
		var errs errPoints
		for j := range min(len(s.X), len(s.Y)) {
			if !p.ok(s.X[j], s.Y[j]) {
				if len(cur) > 0 {
					segs, cur = append(segs, cur), nil
				}
				continue
			}
			cur = append(cur, plotter.XY{X: s.X[j], Y: s.Y[j]})
			if j < len(s.YLow) && j < len(s.YHigh) && p.ok(s.X[j], s.YLow[j]) && p.ok(s.X[j], s.YHigh[j]) {
				errs = append(errs, errPoint{x: s.X[j], y: s.Y[j], lo: s.Y[j] - s.YLow[j], hi: s.YHigh[j] - s.Y[j]})
			}
		}
		if len(cur) > 0 {
			segs = append(segs, cur)
		}
		c := palette[i%len(palette)]
		for k, xys := range segs {
			n += len(xys)
			line, points, err := plotter.NewLinePoints(xys)
			if err != nil {
				return 0, fmt.Errorf("figures: %w", err)
			}
			line.Color, line.Width = c, vg.Points(1.5)
			points.Color = c
			points.Shape = shapes[i%len(shapes)]
			switch {
			case s.PointsOnly:
				pl.Add(points)
			case len(xys) > 40:
				pl.Add(line)
			default:
				pl.Add(line, points)
			}
			if k == 0 {
				pl.Legend.Add(s.Name, line)
			}
		}
		if len(errs) > 0 {
			eb, err := plotter.NewYErrorBars(errs)
			if err != nil {
				return 0, fmt.Errorf("figures: %w", err)
			}
			eb.Color = c
			pl.Add(eb)
		}
	}
	return n, nil
}

func (p Panel) addBars(pl *plot.Plot) (int, error) {
	index := map[string]int{}
	for i, c := range p.Categories {
		index[c] = i
	}
	groups := len(p.Bars)
	width := vg.Points(math.Min(60, 260/float64(max(groups*len(p.Categories), 1))))
	n := 0
	for gi, s := range p.Bars {
		vals := make([]float64, len(p.Categories))
		for i := range vals {
			vals[i] = math.NaN()
		}
		var errs errPoints
		for _, b := range s.Bars {
			i, ok := index[b.Category]
			if !ok || !p.ok(float64(i)+1, b.Value) {
				continue
			}
			vals[i] = b.Value
			n++
			if !math.IsNaN(b.Low) && !math.IsNaN(b.High) && p.ok(1, b.Low) && p.ok(1, b.High) {
				errs = append(errs, errPoint{x: float64(i), y: b.Value, lo: b.Value - b.Low, hi: b.High - b.Value})
			}
		}
		c := palette[gi%len(palette)]
		bc := &bars{vals: vals, width: width, color: c, logY: p.LogY,
			offset: vg.Length(float64(gi)-float64(groups-1)/2) * width}
		pl.Add(bc)
		if len(p.Bars) > 1 || s.Name != "" {
			pl.Legend.Add(s.Name, bc)
		}
		if len(errs) > 0 {
			pl.Add(whiskers{pts: errs, offset: bc.offset, color: color.Gray{Y: 40}})
		}
	}
	pl.NominalX(p.Categories...)
	// Room on both sides for the outer bars of each group.
	pl.X.Min, pl.X.Max = -0.5, float64(len(p.Categories))-0.5
	return n, nil
}

// bars draws one series of a grouped bar chart. Unlike plotter.BarChart it works
// on a log Y axis: bars rise from the bottom of the axis.
type bars struct {
	vals   []float64 // NaN: no bar
	width  vg.Length
	offset vg.Length
	color  color.Color
	logY   bool
}

// Plot draws the bars (plot.Plotter).
func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	base := 0.0
	if b.logY {
		base = p.Y.Min
	}
	for i, v := range b.vals {
		if math.IsNaN(v) {
			continue
		}
		x := trX(float64(i)) + b.offset
		x0, x1, y0, y1 := x-b.width/2, x+b.width/2, trY(base), trY(v)
		poly := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		c.FillPolygon(b.color, c.ClipPolygonY(poly))
	}
}

// DataRange spans the categories and the bars' heights (plot.DataRanger).
func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = math.Inf(1), math.Inf(-1)
	for _, v := range b.vals {
		if !math.IsNaN(v) {
			ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
		}
	}
	if !b.logY {
		ymin = math.Min(ymin, 0)
	}
	return 0, float64(len(b.vals) - 1), ymin, ymax
}

// Thumbnail draws the legend's swatch (plot.Thumbnailer).
func (b *bars) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(b.color, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}

// whiskers draws error bars at a fixed drawing offset from their data X, so that
// they sit on the bars of a grouped bar chart (whose offsets are drawing units).
type whiskers struct {
	pts    errPoints
	offset vg.Length
	color  color.Color
}

// Plot draws the whiskers (plot.Plotter).
func (w whiskers) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	st := draw.LineStyle{Color: w.color, Width: vg.Points(1)}
	capW := vg.Points(4)
	for _, e := range w.pts {
		x := trX(e.x) + w.offset
		lo, hi := trY(e.y-e.lo), trY(e.y+e.hi)
		c.StrokeLine2(st, x, lo, x, hi)
		c.StrokeLine2(st, x-capW, lo, x+capW, lo)
		c.StrokeLine2(st, x-capW, hi, x+capW, hi)
	}
}

// DataRange makes the axes include the whiskers' ends.
func (w whiskers) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, e := range w.pts {
		xmin, xmax = math.Min(xmin, e.x), math.Max(xmax, e.x)
		ymin, ymax = math.Min(ymin, e.y-e.lo), math.Max(ymax, e.y+e.hi)
	}
	return xmin, xmax, ymin, ymax
}

var shapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}, draw.RingGlyph{}}

type errPoint struct{ x, y, lo, hi float64 }

type errPoints []errPoint

// Len is the number of points (plotter.XYer).
func (e errPoints) Len() int { return len(e) }

// XY is point i (plotter.XYer).
func (e errPoints) XY(i int) (float64, float64) { return e[i].x, e[i].y }

// YError is the distance from point i down to its low end and up to its high
// end (plotter.YErrorer).
func (e errPoints) YError(i int) (float64, float64) { return e[i].lo, e[i].hi }

// HumanTicks labels a linear axis with k/M suffixes and no needless
// decimals (gonum labels 0 to 25 as "0.00", "25.00"); the fault suite's
// timelines use it too.
type HumanTicks struct{}

// Ticks returns gonum's default ticks with human labels (plot.Ticker).
func (HumanTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = human(ticks[i].Value)
		}
	}
	return ticks
}

// humanLogTicks are plot.LogTicks labelled like HumanTicks; a range that is not
// positive (which LogTicks would panic on) gets no ticks.
type humanLogTicks struct{}

// Ticks returns log ticks with human labels (plot.Ticker).
func (humanLogTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= 0 || math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil
	}
	ticks := plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = human(ticks[i].Value)
		}
	}
	return ticks
}

func human(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	case a > 0 && a < 0.01:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
