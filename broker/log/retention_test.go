package log

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// threeSegments builds a log of segments [0,80) [80,160) [160,200) with
// modification times base-3h, base-2h, base-1h.
func threeSegments(t *testing.T, cfg Config) (*Log, time.Time) {
	t.Helper()
	cfg.FileSize = 100
	l := getLog(t, openManager(t, cfg), "t", 0)
	for range 5 {
		mustAppend(t, l, messageSet(0, 1, 31))
	}
	base := cfg.Clock.Now().Truncate(time.Millisecond)
	for i, name := range []string{wire.SegmentName(0), wire.SegmentName(80), wire.SegmentName(160)} {
		setModTime(t, filepath.Join(l.dir, name), base.Add(time.Duration(i-3)*time.Hour))
	}
	return l, base
}

func TestOffsetsBefore(t *testing.T) {
	cfg, _ := testConfig(t)
	l, base := threeSegments(t, cfg)
	ms := func(d time.Duration) int64 { return base.Add(d).UnixMilli() }
	// The pairs: (0, -3h) (80, -2h) (160, -1h) (200, now).
	tests := []struct {
		name   string
		timeMs int64
		max    int
		want   []wire.Offset
	}{
		{"latest", wire.LatestTime, 1, []wire.Offset{200}},
		{"latest, more", wire.LatestTime, 10, []wire.Offset{200, 160, 80, 0}},
		{"earliest", wire.EarliestTime, 1, []wire.Offset{0}},
		{"earliest, more", wire.EarliestTime, 10, []wire.Offset{0}},
		{"before everything", ms(-4 * time.Hour), 10, []wire.Offset{}},
		{"at a segment's mtime", ms(-2 * time.Hour), 10, []wire.Offset{80, 0}},
		{"between mtimes", ms(-90 * time.Minute), 10, []wire.Offset{80, 0}},
		{"max 1", ms(-30 * time.Minute), 1, []wire.Offset{160}},
		{"now includes the end", ms(0), 2, []wire.Offset{200, 160}},
		{"max 0", wire.LatestTime, 0, []wire.Offset{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := l.OffsetsBefore(tt.timeMs, tt.max); !slices.Equal(got, tt.want) {
				t.Fatalf("OffsetsBefore(%d, %d) = %v, want %v", tt.timeMs, tt.max, got, tt.want)
			}
		})
	}
}

func TestOffsetsBeforeLeavesOutAnEmptyActiveSegmentsEnd(t *testing.T) {
	cfg, _ := testConfig(t)
	l := getLog(t, openManager(t, cfg), "t", 0)
	// Empty log: latest and earliest are both 0, as 0.7's answer [0].
	if got := l.OffsetsBefore(wire.LatestTime, 5); !slices.Equal(got, []wire.Offset{0}) {
		t.Fatalf("latest of an empty log: %v", got)
	}
	if got := l.OffsetsBefore(wire.EarliestTime, 5); !slices.Equal(got, []wire.Offset{0}) {
		t.Fatalf("earliest of an empty log: %v", got)
	}
	// Unflushed bytes do not count.
	cfg2, _ := testConfig(t)
	cfg2.FlushInterval = 100
	l2 := getLog(t, openManager(t, cfg2), "t", 0)
	appendOnly(t, l2, messageSet(0, 1, 10))
	if got := l2.OffsetsBefore(wire.LatestTime, 5); !slices.Equal(got, []wire.Offset{0}) {
		t.Fatalf("latest with only unflushed bytes: %v", got)
	}
}

func TestRetentionByTime(t *testing.T) {
	cfg, clock := testConfig(t)
	cfg.RetentionTime = 150 * time.Minute
	l, _ := threeSegments(t, cfg)
	all := readAll(t, l)

	// Only the segment older than 150 minutes goes.
	if n, err := l.DeleteOldSegments(); err != nil || n != 1 {
		t.Fatalf("DeleteOldSegments = %d, %v; want 1", n, err)
	}
	if got, want := segmentFiles(t, l.dir), []string{wire.SegmentName(80), wire.SegmentName(160)}; !slices.Equal(got, want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	if l.StartOffset() != 80 || l.EndOffset() != 200 {
		t.Fatalf("range [%d, %d], want [80, 200]", l.StartOffset(), l.EndOffset())
	}
	if got := readAll(t, l); !bytes.Equal(got, all[80:]) {
		t.Fatal("remaining bytes differ")
	}
	if n, err := l.DeleteOldSegments(); err != nil || n != 0 {
		t.Fatalf("second DeleteOldSegments = %d, %v; want 0", n, err)
	}

	// Everything expired: the active segment rolls first, so the end offset
	// is kept and the log continues at 200.
	clock.Advance(10 * time.Hour)
	if n, err := l.DeleteOldSegments(); err != nil || n != 2 {
		t.Fatalf("DeleteOldSegments = %d, %v; want 2", n, err)
	}
	if got, want := segmentFiles(t, l.dir), []string{wire.SegmentName(200)}; !slices.Equal(got, want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	if l.StartOffset() != 200 || l.EndOffset() != 200 {
		t.Fatalf("range [%d, %d], want [200, 200]", l.StartOffset(), l.EndOffset())
	}
	if off := mustAppend(t, l, messageSet(0, 1, 31)); off != 200 {
		t.Fatalf("append after full retention at %d, want 200", off)
	}

	// An expired empty active segment is kept, and restamped.
	cfg2, clock2 := testConfig(t)
	l2 := getLog(t, openManager(t, cfg2), "u", 0)
	clock2.Advance(cfg2.RetentionTime + time.Hour)
	if n, err := l2.DeleteOldSegments(); err != nil || n != 0 {
		t.Fatalf("DeleteOldSegments of an empty log = %d, %v; want 0", n, err)
	}
	fi, err := os.Stat(filepath.Join(l2.dir, wire.SegmentName(0)))
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(clock2.Now()) {
		t.Fatalf("empty segment mtime %v, want %v", fi.ModTime(), clock2.Now())
	}
}

func TestRetentionBySize(t *testing.T) {
	tests := []struct {
		limit int64
		want  []string
	}{
		{-1, []string{wire.SegmentName(0), wire.SegmentName(80), wire.SegmentName(160)}},
		{500, []string{wire.SegmentName(0), wire.SegmentName(80), wire.SegmentName(160)}},
		{200, []string{wire.SegmentName(0), wire.SegmentName(80), wire.SegmentName(160)}},
		// As 0.7: a segment goes only if the log stays at least the
		// limit without it; 200 bytes against 199 deletes nothing.
		{199, []string{wire.SegmentName(0), wire.SegmentName(80), wire.SegmentName(160)}},
		{120, []string{wire.SegmentName(80), wire.SegmentName(160)}},
		{119, []string{wire.SegmentName(80), wire.SegmentName(160)}},
		{40, []string{wire.SegmentName(160)}},
		{0, []string{wire.SegmentName(200)}}, // everything: roll first
	}
	for _, tt := range tests {
		cfg, _ := testConfig(t)
		cfg.RetentionSize = tt.limit
		l, _ := threeSegments(t, cfg)
		if _, err := l.DeleteOldSegments(); err != nil {
			t.Fatal(err)
		}
		if got := segmentFiles(t, l.dir); !slices.Equal(got, tt.want) {
			t.Errorf("retention size %d: segments %v, want %v", tt.limit, got, tt.want)
		}
		if l.EndOffset() != 200 {
			t.Errorf("retention size %d: end %d", tt.limit, l.EndOffset())
		}
	}
}

// TestRetentionKeepsWhatIsAboveTheBound: a log the replication layer bounds
// by its HW loses only segments that end at or below the bound, however old
// (the seed-669 soak trial: a leader whose followers were cut off deleted
// segments no follower held).
func TestRetentionKeepsWhatIsAboveTheBound(t *testing.T) {
	cfg, clock := testConfig(t)
	cfg.RetentionTime = time.Minute
	l, _ := threeSegments(t, cfg) // [0,80) [80,160) [160,200), all expired
	var hw atomic.Int64
	l.BoundRetention(func() wire.Offset { return wire.Offset(hw.Load()) })
	for _, step := range []struct {
		hw        wire.Offset
		deleted   int
		start     wire.Offset
		remaining []string
	}{
		{0, 0, 0, []string{wire.SegmentName(0), wire.SegmentName(80), wire.SegmentName(160)}},
		{79, 0, 0, []string{wire.SegmentName(0), wire.SegmentName(80), wire.SegmentName(160)}},
		{80, 1, 80, []string{wire.SegmentName(80), wire.SegmentName(160)}},
		{199, 1, 160, []string{wire.SegmentName(160)}},
		// The whole log committed: the active segment rolls and goes too.
		{200, 1, 200, []string{wire.SegmentName(200)}},
	} {
		hw.Store(int64(step.hw))
		if info := l.Info(); len(info.Segments) > 0 {
			expiring := 0
			for _, s := range info.Segments {
				if s.Expiring {
					expiring++
				}
			}
			if expiring != step.deleted {
				t.Errorf("bound %d: Info says %d segments expiring, want %d", step.hw, expiring, step.deleted)
			}
		}
		if n, err := l.DeleteOldSegments(); err != nil || n != step.deleted {
			t.Fatalf("bound %d: DeleteOldSegments = %d, %v; want %d", step.hw, n, err, step.deleted)
		}
		if got := segmentFiles(t, l.dir); !slices.Equal(got, step.remaining) {
			t.Fatalf("bound %d: segments %v, want %v", step.hw, got, step.remaining)
		}
		if l.StartOffset() != step.start || l.EndOffset() != 200 {
			t.Fatalf("bound %d: range [%d, %d], want [%d, 200]", step.hw, l.StartOffset(), l.EndOffset(), step.start)
		}
		clock.Advance(time.Hour)
	}
}

func TestRetentionIsSafeForHeldRegions(t *testing.T) {
	cfg, clock := testConfig(t)
	l, _ := threeSegments(t, cfg)
	r, err := l.Read(0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want, err := r.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(cfg.RetentionTime)
	if n, err := l.DeleteOldSegments(); err != nil || n != 3 {
		t.Fatalf("DeleteOldSegments = %d, %v; want 3", n, err)
	}
	if _, err := os.Stat(filepath.Join(l.dir, wire.SegmentName(0))); !os.IsNotExist(err) {
		t.Fatalf("deleted segment still has its name: %v", err)
	}
	// The region still reads the deleted file's bytes.
	got, err := r.AppendTo(nil)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("reading a held region of a deleted segment: %v", err)
	}
	file := r.File
	r.Release()
	// Released: the file is closed now.
	if _, err := file.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("file after the last release: %v, want closed", err)
	}
}
