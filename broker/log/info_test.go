package log

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// TestInfo: Info lists the segments with their sizes and times, the active
// one, the offsets (start, flushed, written end), and exactly the segments
// the next retention run deletes.
func TestInfo(t *testing.T) {
	for _, tt := range []struct {
		name      string
		retention time.Duration
		size      int64
		expiring  []bool
	}{
		{"none expired", 4 * time.Hour, -1, []bool{false, false, false}},
		{"oldest by age", 150 * time.Minute, -1, []bool{true, false, false}},
		{"two by age", 90 * time.Minute, -1, []bool{true, true, false}},
		{"by size", 4 * time.Hour, 120, []bool{true, false, false}},
		{"all expired: the active one rolls", 30 * time.Minute, -1, []bool{true, true, true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := testConfig(t)
			cfg.RetentionTime, cfg.RetentionSize = tt.retention, tt.size
			l, base := threeSegments(t, cfg)
			info := l.Info()
			if info.Topic != "t" || info.Partition != 0 || info.StartOffset != 0 || info.FlushedOffset != 200 || info.EndOffset != 200 {
				t.Fatalf("Info = %+v", info)
			}
			var names []string
			var expiring []bool
			for i, s := range info.Segments {
				names = append(names, s.Name)
				expiring = append(expiring, s.Expiring)
				if want := base.Add(time.Duration(i-3) * time.Hour); !s.ModTime.Equal(want) || !s.ExpiresAt.Equal(want.Add(tt.retention)) {
					t.Errorf("segment %s: mtime %v expires %v; want %v, %v", s.Name, s.ModTime, s.ExpiresAt, want, want.Add(tt.retention))
				}
				if s.Active != (i == 2) {
					t.Errorf("segment %s: active %v", s.Name, s.Active)
				}
			}
			if want := []string{wire.SegmentName(0), wire.SegmentName(80), wire.SegmentName(160)}; !slices.Equal(names, want) {
				t.Fatalf("segments %v, want %v", names, want)
			}
			if sizes := []int64{info.Segments[0].Size, info.Segments[1].Size, info.Segments[2].Size}; !slices.Equal(sizes, []int64{80, 80, 40}) {
				t.Fatalf("sizes %v", sizes)
			}
			if !slices.Equal(expiring, tt.expiring) {
				t.Fatalf("expiring %v, want %v", expiring, tt.expiring)
			}
			// The prediction is what retention does.
			want := 0
			for _, e := range expiring {
				if e {
					want++
				}
			}
			if n, err := l.DeleteOldSegments(); err != nil || n != want {
				t.Fatalf("DeleteOldSegments = %d, %v; Info predicted %d", n, err, want)
			}
		})
	}
}

// TestInfoUnflushed: written but unflushed bytes are past the flushed
// offset.
func TestInfoUnflushed(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.FlushInterval = 1000
	l := getLog(t, openManager(t, cfg), "t", 0)
	first := wire.Offset(len(messageSet(0, 2, 10)))
	mustAppend(t, l, messageSet(0, 2, 10))
	appendOnly(t, l, messageSet(2, 1, 10))
	info := l.Info()
	if info.FlushedOffset != first || info.EndOffset != first+wire.Offset(len(messageSet(2, 1, 10))) {
		t.Fatalf("flushed %d end %d; want %d and more", info.FlushedOffset, info.EndOffset, first)
	}
	if len(info.Segments) != 1 || !info.Segments[0].Active || info.Segments[0].Size != int64(info.EndOffset) {
		t.Fatalf("segments %+v", info.Segments)
	}
}

type flushCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (f *flushCounter) Flushed(l *Log, took time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n[l.String()]++
}

// TestObserverFlushed: the observer hears of flushes that wrote something
// and of rolls, not of flushes with nothing to do.
func TestObserverFlushed(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.FlushInterval = 1000
	cfg.FileSize = 100
	fc := &flushCounter{n: map[string]int{}}
	cfg.Observer = fc
	m := openManager(t, cfg)
	l := getLog(t, m, "t", 0)
	appendOnly(t, l, messageSet(0, 1, 31))
	mustFlush(t, l)
	mustFlush(t, l) // nothing to flush
	appendOnly(t, l, messageSet(1, 1, 31))
	appendOnly(t, l, messageSet(2, 1, 31)) // rolls: the fsync of the full segment
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if got := fc.n["t-0"]; got != 2 {
		t.Fatalf("flushes observed %v, want 2 for t-0", fc.n)
	}
	if got := m.Logs(); len(got) != 1 || got[0] != l {
		t.Fatalf("Logs() = %v", got)
	}
}
