package log

import (
	"fmt"

	"github.com/netdb11/kafka/broker/wire"
)

// Read returns the region of at most maxBytes bytes of the log starting at
// offset, clipped to the flushed end and to the end of the segment holding
// offset. It does not cut at a message boundary: the region may end in the
// middle of a message, which the client drops and fetches again (as Kafka
// 0.7). The caller must Release the region.
//
// offset must be in [StartOffset, EndOffset]: below or above, the error is an
// *OffsetOutOfRangeError carrying the valid range (wire code 1). At
// EndOffset, or with maxBytes 0, the region is empty. A negative maxBytes
// wraps wire.ErrInvalidFetchSize.
//
// The log has no index of message boundaries (paper §3.1), so an offset
// inside the log but not at the start of a message cannot be detected here:
// the region then starts mid-message, and the client's iterator reports it
// as corrupt (or, rarely, misreads it). Clients only use offsets the broker
// gave them: a message's next offset or a result of OffsetsBefore.
func (l *Log) Read(offset wire.Offset, maxBytes int) (Region, error) {
	return l.read(offset, maxBytes, -1)
}

// read is Read, bounded by limit instead of the flushed end when limit is
// not negative (limit must not pass the written end).
func (l *Log) read(offset wire.Offset, maxBytes int, limit wire.Offset) (Region, error) {
	if maxBytes < 0 {
		return Region{}, fmt.Errorf("log %s: read of %d bytes: %w", l, maxBytes, wire.ErrInvalidFetchSize)
	}
	for {
		v := l.view.Load()
		if v == nil {
			return Region{}, fmt.Errorf("log %s: %w", l, ErrClosed)
		}
		vend := v.end
		if limit >= 0 {
			vend = limit
		}
		if start := v.segs[0].start; offset < start || offset > vend {
			return Region{}, &OffsetOutOfRangeError{Requested: offset, Start: start, End: vend}
		}
		if offset == vend || maxBytes == 0 {
			return Region{}, nil
		}
		i := v.find(offset)
		seg := v.segs[i]
		end := vend
		if i+1 < len(v.segs) {
			end = min(end, v.segs[i+1].start)
		}
		if !seg.tryAcquire() {
			// Retention let go of seg after we loaded v; the new
			// view no longer holds it.
			continue
		}
		return Region{
			File: seg.file,
			Pos:  int64(offset - seg.start),
			Len:  min(int64(maxBytes), int64(end-offset)),
			ref:  &regionRef{seg: seg},
		}, nil
	}
}

// find returns the index of the segment holding offset: the last one whose
// start is at or before it. offset must be at or after segs[0].start.
func (v *view) find(offset wire.Offset) int {
	lo, hi := 0, len(v.segs) // segs[lo].start <= offset; segs[hi].start > offset
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		if v.segs[mid].start <= offset {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// StartOffset returns the first offset of the log (its oldest segment's
// start), or 0 if the log is closed.
func (l *Log) StartOffset() wire.Offset {
	if v := l.view.Load(); v != nil {
		return v.segs[0].start
	}
	return 0
}

// EndOffset returns the flushed end of the log: the offset the next flushed
// message will have, the end of what readers see. It is 0 if the log is
// closed.
func (l *Log) EndOffset() wire.Offset {
	if v := l.view.Load(); v != nil {
		return v.end
	}
	return 0
}

// OffsetsBefore answers Kafka 0.7's OFFSETS request, mirroring its
// Log.getOffsetsBefore. Think of the list of (offset, time) pairs made of
// every segment's (start, modification time), oldest first, followed by
// (EndOffset, now) if the active segment holds flushed bytes. For
// wire.LatestTime (-1) the answer starts at the last pair, for
// wire.EarliestTime (-2) at the first, and for any other timeMs (Unix
// milliseconds) at the last pair whose time is at or before timeMs; from
// there it lists at most max offsets going back in time, newest first.
// So -1 yields EndOffset first and -2 yields StartOffset. The result is empty
// if no pair qualifies, if max < 1, or if the log is closed.
func (l *Log) OffsetsBefore(timeMs int64, max int) []wire.Offset {
	v := l.view.Load()
	if v == nil || max < 1 {
		return nil
	}
	type pair struct {
		offset wire.Offset
		ms     int64
	}
	pairs := make([]pair, 0, len(v.segs)+1)
	for _, s := range v.segs {
		pairs = append(pairs, pair{s.start, l.modTimeMs(s)})
	}
	if active := v.segs[len(v.segs)-1]; v.end > active.start {
		pairs = append(pairs, pair{v.end, l.clock.Now().UnixMilli()})
	}
	var from int
	switch timeMs {
	case wire.LatestTime:
		from = len(pairs) - 1
	case wire.EarliestTime:
		from = 0
	default:
		from = len(pairs) - 1
		for from >= 0 && pairs[from].ms > timeMs {
			from--
		}
	}
	n := min(max, from+1)
	out := make([]wire.Offset, n)
	for i := range out {
		out[i] = pairs[from-i].offset
	}
	return out
}

// modTimeMs returns a segment's modification time in Unix milliseconds, or
// 0 (as Java's File.lastModified) if it cannot be had, e.g. because the
// segment was deleted and closed meanwhile.
func (l *Log) modTimeMs(s *segment) int64 {
	if !s.tryAcquire() {
		return 0
	}
	fi, err := s.file.Stat()
	if rerr := s.release(); rerr != nil {
		l.logger.Error("releasing a segment", "file", s.path, "err", rerr)
	}
	if err != nil {
		l.logger.Warn("stat segment", "file", s.path, "err", err)
		return 0
	}
	return fi.ModTime().UnixMilli()
}
