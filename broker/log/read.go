package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

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
// The log has no index of message boundaries (paper §3.1). An offset inside
// a segment is checked by reading the message that should start there: its
// size must fit before the end, and its header (and its CRC, when it is at
// most boundaryCheckMax bytes) must be valid; otherwise the error wraps
// ErrNotBoundary, and so wire.ErrInvalidMessage (code 2). Clients only use
// offsets the broker gave them: a message's next offset or a result of
// OffsetsBefore.
//
// Deviation: Kafka 0.7 sends the bytes from any offset, and the client's
// iterator then reports garbage (a huge size, or waits for it). The check
// costs one pread of the first message.
func (l *Log) Read(offset wire.Offset, maxBytes int) (Region, error) {
	return l.read(offset, maxBytes, -1, false)
}

// read is Read, bounded by limit instead of the flushed end when limit is
// not negative (limit must not pass the written end). With boundary true
// the caller knows offset starts a message and the check is skipped.
func (l *Log) read(offset wire.Offset, maxBytes int, limit wire.Offset, boundary bool) (Region, error) {
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
		if offset != seg.start && !boundary {
			if reason := checkBoundary(seg.file, int64(offset-seg.start), int64(end-offset)); reason != "" {
				if err := seg.release(); err != nil {
					l.logger.Error("releasing a segment", "file", seg.path, "err", err)
				}
				return Region{}, fmt.Errorf("log %s: offset %d: %w: %s", l, offset, ErrNotBoundary, reason)
			}
		}
		return Region{
			File: seg.file,
			Pos:  int64(offset - seg.start),
			Len:  min(int64(maxBytes), int64(end-offset)),
			ref:  &regionRef{seg: seg},
		}, nil
	}
}

// boundaryCheckMax is the largest message whose CRC a read checks to make
// sure it starts at a message boundary; a larger one has its size and
// header checked only.
const boundaryCheckMax = 16 << 10

var boundaryBufs = sync.Pool{New: func() any { return new([boundaryCheckMax]byte) }}

// checkBoundary reads the message that should start at pos of f, with avail
// bytes readable from there (the read's end is always a message boundary),
// and returns why it is not a message, or "" if it is.
func checkBoundary(f *os.File, pos, avail int64) string {
	buf := boundaryBufs.Get().(*[boundaryCheckMax]byte)
	defer boundaryBufs.Put(buf)
	head := buf[:min(int64(wire.SizeLen+wire.HeaderLenV1), avail)]
	if _, err := f.ReadAt(head, pos); err != nil {
		return fmt.Sprintf("read: %v", err)
	}
	if len(head) < wire.SizeLen {
		return fmt.Sprintf("%d bytes remain, less than a size field", avail)
	}
	size := int64(int32(binary.BigEndian.Uint32(head)))
	total := wire.SizeLen + size
	switch {
	case size < wire.HeaderLenV0:
		return fmt.Sprintf("size field %d is smaller than a message header", size)
	case total > avail:
		return fmt.Sprintf("size field %d runs past the end of the log (%d bytes remain)", size, avail)
	case total > boundaryCheckMax:
		if m := head[wire.SizeLen]; m != wire.MagicV0 && m != wire.MagicV1 {
			return fmt.Sprintf("magic %d is unknown", m)
		}
		return ""
	}
	msg := buf[:total]
	if _, err := f.ReadAt(msg, pos); err != nil {
		return fmt.Sprintf("read: %v", err)
	}
	if _, err := wire.Validate(msg, 0); err != nil {
		var ce *wire.CorruptError
		if errors.As(err, &ce) {
			return ce.Reason
		}
		return err.Error()
	}
	return ""
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
