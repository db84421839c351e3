package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
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
// Deleted segments leave the table at once (readers get OffsetOutOfRange
// below the new start); each file is unlinked now and closed when the last
// Region reading it is released.
func (l *Log) DeleteOldSegments() (int, error) {
	l.mu.Lock()
	if err := l.writableLocked(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	dead, err := l.cutOldSegmentsLocked(l.clock.Now())
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

// cutOldSegmentsLocked takes the segments that retention deletes out of the
// table and returns them.
func (l *Log) cutOldSegmentsLocked(now time.Time) ([]*segment, error) {
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
	n := expiredCount(mtimes, sizes, now, l.retention, l.cfg.RetentionSize)
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
