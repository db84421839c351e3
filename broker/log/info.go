package log

import (
	"cmp"
	"path/filepath"
	"slices"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// Info describes a partition's log as an operator sees it: its segment files
// and the offsets that bound what consumers read. The broker's admin
// endpoint serves it and kafka-ui draws it.
type Info struct {
	// Topic and Partition name the log.
	Topic     string         `json:"topic"`
	Partition wire.Partition `json:"partition"`
	// StartOffset is the first offset (the oldest segment's start).
	StartOffset wire.Offset `json:"start_offset"`
	// FlushedOffset is the flushed end (EndOffset): consumers read
	// [StartOffset, FlushedOffset). Paper §3.1: a message is exposed to
	// consumers only after it is flushed.
	FlushedOffset wire.Offset `json:"flushed_offset"`
	// EndOffset is the written end (WrittenEnd): the offset the next
	// appended message gets. The bytes [FlushedOffset, EndOffset) are
	// written but not yet flushed.
	EndOffset wire.Offset `json:"end_offset"`
	// Retention is the topic's retention time (log.retention.hours or its
	// topic override) and RetentionSize log.retention.size (-1: none).
	Retention     time.Duration `json:"retention_ns"`
	RetentionSize int64         `json:"retention_size"`
	// Segments are the segment files, oldest first; the last is active.
	Segments []SegmentInfo `json:"segments"`
	// Failed, when not empty, is why the log refuses writes until the
	// broker restarts: a write or fsync failed other than for want of
	// space (ErrFailed). Reads go on.
	Failed string `json:"failed,omitempty"`
}

// SegmentInfo describes one segment file.
type SegmentInfo struct {
	// Name is the file name: the start offset in 20 digits, ".kafka".
	Name string `json:"name"`
	// Start is the offset of its first byte; Size its length in bytes.
	Start wire.Offset `json:"start"`
	Size  int64       `json:"size"`
	// ModTime is the file's modification time, which retention goes by
	// (zero if the file could not be looked at: deleted meanwhile).
	ModTime time.Time `json:"mtime"`
	// Active is true for the last segment, the one appended to.
	Active bool `json:"active"`
	// ExpiresAt is ModTime plus the retention time.
	ExpiresAt time.Time `json:"expires_at"`
	// Expiring is true when the next retention run (DeleteOldSegments) at
	// the time Info was taken deletes the segment, by age or by size.
	Expiring bool `json:"expiring"`
}

// Info returns a snapshot of the log's segments and offsets. It looks at
// each segment file's modification time, holding the log's lock only to
// read the segment table and the written end. A closed log has no
// segments.
func (l *Log) Info() Info {
	info := Info{
		Topic:         l.topic,
		Partition:     l.partition,
		Retention:     l.retention,
		RetentionSize: l.cfg.RetentionSize,
	}
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
	n := expiredCount(mtimes, sizes, now, l.retention, l.cfg.RetentionSize)
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
