package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/netdb11/kafka/broker/admin"
	"github.com/netdb11/kafka/broker/wire"
)

// chart is a line chart of a lag series, drawn as an inline SVG polyline
// over the last span: x is time (now at the right edge), y the lag (0 at
// the bottom, the series' maximum at the top).
type chart struct {
	W, H    int
	Points  string // "x,y x,y ..." for <polyline points>
	Max     int64
	Last    int64
	Samples int
	Span    time.Duration
}

func newChart(s []sample, now time.Time, span time.Duration, w, h int) chart {
	c := chart{W: w, H: h, Samples: len(s), Span: span}
	if len(s) == 0 {
		return c
	}
	for _, p := range s {
		c.Max = max(c.Max, p.lag)
	}
	c.Last = s[len(s)-1].lag
	scale := float64(max(c.Max, 1))
	var b strings.Builder
	const pad = 2
	for i, p := range s {
		x := float64(w) * (1 - float64(now.Sub(p.at))/float64(span))
		y := pad + float64(h-2*pad)*(1-float64(p.lag)/scale)
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", max(x, 0), y)
	}
	c.Points = b.String()
	return c
}

// bar draws a partition's log as a horizontal bar from its start to its
// end, in a 1000-unit wide SVG: the flushed part (what consumers may read),
// the written but unflushed part, the segment boundaries, and where each
// group's committed offset is.
type bar struct {
	Start, Flushed, End wire.Offset
	// FlushedX is where the flushed part ends; EndX is the bar's end (1000).
	FlushedX, EndX float64
	Segments       []barSegment
	Marks          []barMark
	// HW marks the high watermark of a replicated partition: what its
	// consumers may read up to (nil for a partition that is not).
	HW *barMark
	x  func(wire.Offset) float64
}

type barSegment struct {
	X, W     float64
	Name     string
	Expiring bool
	Active   bool
}

type barMark struct {
	X     float64
	Group string
	At    wire.Offset
}

const barWidth = 1000

func newBar(p Partition, info *admin.Info, groups []groupAt) bar {
	b := bar{Start: p.Start, Flushed: p.Flushed, End: p.End, EndX: barWidth}
	span := float64(max(p.End-p.Start, 1))
	x := func(o wire.Offset) float64 {
		return min(max(float64(o-p.Start)/span*barWidth, 0), barWidth)
	}
	b.x = x
	b.FlushedX = x(p.Flushed)
	if info != nil {
		for _, s := range info.Segments {
			b.Segments = append(b.Segments, barSegment{X: x(s.Start), W: x(s.Start+wire.Offset(s.Size)) - x(s.Start), Name: s.Name, Expiring: s.Expiring, Active: s.Active})
		}
	}
	for _, g := range groups {
		b.Marks = append(b.Marks, barMark{X: x(g.Committed), Group: g.Group, At: g.Committed})
	}
	return b
}
