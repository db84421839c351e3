package log

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// DeleteOldSegments applies retention to the log, as Kafka 0.7's log
// cleaner: first it deletes, oldest first, the segments whose modification
// time is more than the topic's retention time (log.retention.hours) before
// now; then, if log.retention.size is not -1 and the log is at least that
// large, it deletes more of the oldest segments as long as the log stays at
// least that large without them. It returns how many segments it deleted.
//
// Paper §3.1: the broker deletes whole segments on a time schedule, not
// messages as they are consumed.
//
// The active segment is never deleted while it is the active one: if every
// segment is to go and the active one holds data, the log first rolls to a
// new empty segment (so the end offset is kept); if the active one is empty,
// it stays and its modification time is set to now.
//
// A log the replication layer bounds (BoundRetention) loses only segments
// wholly below the bound, its high watermark, whatever their age or size.
//
// Deleted segments leave the table at once (readers get OffsetOutOfRange
// below the new start); each file is unlinked now and closed when the last
// Region reading it is released.
func (l *Log) DeleteOldSegments() (int, error) {
	// The bound is read before mu (the replication layer takes its own
	// lock, then this log's); a truncation in between may have moved the
	// bound back, so this run then deletes nothing.
	l.mu.Lock()
	truncations := l.truncations
	l.mu.Unlock()
	bound := l.retentionBound()
	l.mu.Lock()
	if err := l.writableLocked(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	if l.truncations != truncations {
		l.mu.Unlock()
		return 0, nil
	}
	dead, err := l.cutOldSegmentsLocked(l.clock.Now(), bound)
	l.mu.Unlock()
	if len(dead) == 0 {
		return 0, err
	}
	var errs []error
	for _, s := range dead {
		l.logger.Info("deleting segment", "file", filepath.Base(s.path))
		if rerr := os.Remove(s.path); rerr != nil {
			errs = append(errs, fmt.Errorf("log %s: delete segment: %w", l, rerr))
		}
		if rerr := s.release(); rerr != nil {
			errs = append(errs, fmt.Errorf("log %s: %w", l, rerr))
		}
	}
	if serr := syncDir(l.dir); serr != nil {
		errs = append(errs, fmt.Errorf("log %s: %w", l, serr))
	}
	return len(dead), errors.Join(append([]error{err}, errs...)...)
}

// BoundRetention makes retention (DeleteOldSegments) delete only segments
// that end at or below bound(), however old or large: the replication layer
// bounds the logs it manages by their high watermark, as Kafka since 0.8
// deletes only segments wholly below it. Without the bound a leader whose
// followers are cut off could delete what no other replica holds yet, and a
// replica could start its log above a point an election later asks it to
// truncate to. bound is called without this log's locks held. A log never
// bounded (the 2011 broker's) deletes by age and size alone (paper §3.1).
func (l *Log) BoundRetention(bound func() wire.Offset) {
	l.bound.Store(&bound)
}

// retentionBound returns the offset retention may delete up to, or noBound.
func (l *Log) retentionBound() wire.Offset {
	if f := l.bound.Load(); f != nil {
		return (*f)()
	}
	return noBound
}

// noBound is the retention bound of a log BoundRetention never bounded.
const noBound = wire.Offset(math.MaxInt64)

// cutOldSegmentsLocked takes the segments that retention deletes at now,
// none ending above bound, out of the table and returns them.
func (l *Log) cutOldSegmentsLocked(now time.Time, bound wire.Offset) ([]*segment, error) {
	v := l.view.Load()
	segs := v.segs
	mtimes := make([]time.Time, len(segs))
	sizes := make([]int64, len(segs))
	for i, s := range segs {
		fi, err := s.file.Stat()
		if err != nil {
			return nil, fmt.Errorf("log %s: retention: %w", l, err)
		}
		mtimes[i] = fi.ModTime()
		sizes[i] = segmentSize(segs, i, l.size)
	}
	n := min(expiredCount(mtimes, sizes, now, l.retention, l.cfg.RetentionSize), belowBound(segs, sizes, bound))
	if n == 0 {
		return nil, nil
	}
	if n == len(segs) {
		if l.size > 0 {
			if err := l.rollLocked(now); err != nil {
				return nil, err
			}
			v = l.view.Load()
		} else {
			// Keep the empty active segment; restamp it so it does
			// not count as expired again at once.
			if err := os.Chtimes(l.active.path, now, now); err != nil {
				l.logger.Warn("restamping the empty active segment", "file", l.active.path, "err", err)
			}
			n--
		}
	}
	dead := append([]*segment(nil), v.segs[:n]...)
	live := append([]*segment(nil), v.segs[n:]...)
	l.view.Store(&view{segs: live, end: v.end})
	return dead, nil
}

// segmentSize is the size of segs[i], the last one (the active segment)
// holding activeSize bytes.
func segmentSize(segs []*segment, i int, activeSize int64) int64 {
	if i == len(segs)-1 {
		return activeSize
	}
	return int64(segs[i+1].start - segs[i].start)
}

// belowBound returns how many of the oldest segments, given their sizes,
// end at or below bound.
func belowBound(segs []*segment, sizes []int64, bound wire.Offset) int {
	n := 0
	for n < len(segs) && segs[n].start+wire.Offset(sizes[n]) <= bound {
		n++
	}
	return n
}

// expiredCount returns how many of the oldest segments, given their
// modification times and sizes (oldest first), retention deletes at now:
// first those older than retention, then, if limit is not -1 and the log is
// at least limit bytes, more of the oldest as long as the log stays at least
// limit bytes without them. (DeleteOldSegments then keeps the active
// segment, as its comment says.)
func expiredCount(mtimes []time.Time, sizes []int64, now time.Time, retention time.Duration, limit int64) int {
	n := 0
	for ; n < len(mtimes); n++ {
		if now.Sub(mtimes[n]) <= retention {
			break
		}
	}
	if limit >= 0 {
		var total int64
		for i := n; i < len(sizes); i++ {
			total += sizes[i]
		}
		if total >= limit {
			for diff := total - limit; n < len(sizes) && diff-sizes[n] >= 0; n++ {
				diff -= sizes[n]
			}
		}
	}
	return n
}
