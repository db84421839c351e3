package log

import (
	"cmp"
	"path/filepath"
	"slices"
	"time"

	"github.com/netdb11/kafka/broker/admin"

	"github.com/netdb11/kafka/broker/wire"
)

// Info returns a snapshot of the log's segments and offsets. It looks at
// each segment file's modification time, holding the log's lock only to
// read the segment table and the written end. A closed log has no
// segments.
// Info and SegmentInfo are the admin endpoint's description of a log,
// defined in broker/admin so that clients read it without importing the log.
type (
	Info        = admin.Info
	SegmentInfo = admin.SegmentInfo
)

func (l *Log) Info() Info {
	info := Info{
		Topic:         l.topic,
		Partition:     l.partition,
		Retention:     l.retention,
		RetentionSize: l.cfg.RetentionSize,
	}
	bound := l.retentionBound() // before mu, as DeleteOldSegments
	l.mu.Lock()
	v := l.view.Load()
	size := l.size
	if l.failed != nil {
		info.Failed = l.failed.Error()
	}
	l.mu.Unlock()
	if v == nil {
		return info
	}
	info.StartOffset = v.segs[0].start
	info.FlushedOffset = v.end
	active := v.segs[len(v.segs)-1]
	info.EndOffset = active.start + wire.Offset(size)
	mtimes := make([]time.Time, len(v.segs))
	sizes := make([]int64, len(v.segs))
	for i, s := range v.segs {
		sizes[i] = segmentSize(v.segs, i, size)
		mtimes[i] = time.UnixMilli(l.modTimeMs(s))
	}
	now := l.clock.Now()
	n := min(expiredCount(mtimes, sizes, now, l.retention, l.cfg.RetentionSize), belowBound(v.segs, sizes, bound))
	if n == len(v.segs) && size == 0 {
		n-- // an empty active segment is kept (DeleteOldSegments)
	}
	info.Segments = make([]SegmentInfo, len(v.segs))
	for i, s := range v.segs {
		si := SegmentInfo{
			Name:     filepath.Base(s.path),
			Start:    s.start,
			Size:     sizes[i],
			Active:   s == active,
			Expiring: i < n,
		}
		if ms := mtimes[i].UnixMilli(); ms != 0 {
			si.ModTime = mtimes[i]
			si.ExpiresAt = mtimes[i].Add(l.retention)
		}
		info.Segments[i] = si
	}
	return info
}

// Logs returns every log the manager holds, by topic and partition, or nil
// after Close.
func (m *Manager) Logs() []*Log {
	out := m.allLogs()
	slices.SortFunc(out, func(a, b *Log) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	return out
}
