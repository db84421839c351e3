package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/admin"
	"github.com/netdb11/kafka/broker/wire"
)

func TestBar(t *testing.T) {
	p := Partition{Start: 1000, Flushed: 1750, End: 2000}
	info := &admin.Info{Segments: []admin.SegmentInfo{
		{Name: "a", Start: 1000, Size: 500, Expiring: true},
		{Name: "b", Start: 1500, Size: 500, Active: true},
	}}
	b := newBar(p, info, []groupAt{{Group: "g", Committed: 1250}, {Group: "old", Committed: 10}})
	if b.FlushedX != 750 || b.EndX != 1000 {
		t.Fatalf("flushed at %v, end at %v; want 750, 1000", b.FlushedX, b.EndX)
	}
	if len(b.Segments) != 2 || b.Segments[0].X != 0 || b.Segments[0].W != 500 || !b.Segments[0].Expiring || b.Segments[1].X != 500 || !b.Segments[1].Active {
		t.Fatalf("segments %+v", b.Segments)
	}
	if b.Marks[0].X != 250 || b.Marks[1].X != 0 {
		t.Fatalf("marks %+v: want 250 and, below the start, clipped to 0", b.Marks)
	}
	empty := newBar(Partition{}, nil, nil)
	if empty.FlushedX != 0 || empty.EndX != barWidth {
		t.Fatalf("empty log bar %+v", empty)
	}
}

func TestChartAndHistory(t *testing.T) {
	h := newHistory(time.Minute)
	now := time.Unix(1000, 0)
	bp := wire.BrokerPartition{Broker: 0, Partition: 1}
	for i, lag := range []int64{100, 400, 200} {
		h.record(&Group{Name: "g", Lag: lag, Partitions: []GroupPartition{{Topic: "t", Partition: bp, Lag: lag, HasLag: true}}}, now.Add(time.Duration(i)*40*time.Second))
	}
	// The first sample is more than a minute older than the last: gone.
	got := h.get("g")
	if len(got) != 2 || got[0].lag != 400 || len(h.get(seriesKey("g", "t", bp))) != 2 {
		t.Fatalf("history %+v", got)
	}
	c := newChart(got, now.Add(100*time.Second), time.Minute, 100, 54)
	if c.Max != 400 || c.Last != 200 || c.Points != "0.0,2.0 66.7,27.0" {
		t.Fatalf("chart %+v", c)
	}
	if e := newChart(nil, now, time.Minute, 100, 50); e.Points != "" || e.Samples != 0 {
		t.Fatalf("empty chart %+v", e)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1.0 kB", 1234567: "1.2 MB", 5e12: "5.0 TB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "nothing to show") {
		t.Fatalf("no source: %v", err)
	}
	cfg.Admin = []string{"nohost"}
	cfg.Refresh = 0
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), `"nohost" is not host:port`) || !strings.Contains(err.Error(), "must be positive") {
		t.Fatalf("bad admin and refresh: %v", err)
	}
}
