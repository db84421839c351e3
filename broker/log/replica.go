package log

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// What the replication layer (broker/replica) needs of a log: the written end
// (a follower copies what the leader has written, flushed or not), reads up
// to it, and truncation of a diverged tail. The 2011 broker uses none of it.

// GetOrCreateAssigned is GetOrCreate for a partition the replication layer
// assigned to this broker: any partition number from 0 up, whatever the
// topic's configured partition count (the assignment in ZooKeeper decides).
func (m *Manager) GetOrCreateAssigned(topic string, partition wire.Partition) (*Log, error) {
	return m.getOrCreate(topic, partition, true)
}

// deletingSuffix marks a partition directory being deleted (Delete renames
// it first): Open finishes the removal of one a crash left behind.
const deletingSuffix = ".deleting"

// Delete closes the log of a partition and removes its directory with all
// it holds (the replication layer's files too): what a STOP_REPLICA with
// delete asks of a replica that a reassignment dropped (0.8's
// LogManager.deleteLog). The directory is first renamed to
// "<topic>-<partition>.deleting" and the rename made durable, so a crash
// in the middle leaves no half-deleted partition that a restart would
// open; Open removes such leftovers. Reads in flight keep their Regions'
// files open until released. A partition this manager does not hold wraps
// wire.ErrWrongPartition.
func (m *Manager) Delete(topic string, partition wire.Partition) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return fmt.Errorf("log: %w", ErrClosed)
	}
	l := m.logs[topic][partition]
	if l == nil {
		m.mu.Unlock()
		return fmt.Errorf("log: delete topic %q partition %d: %w (not on this broker)", topic, partition, wire.ErrWrongPartition)
	}
	delete(m.logs[topic], partition)
	if len(m.logs[topic]) == 0 {
		delete(m.logs, topic)
	}
	m.mu.Unlock()
	cerr := l.close()
	gone := l.dir + deletingSuffix
	if err := os.Rename(l.dir, gone); err != nil {
		return errors.Join(fmt.Errorf("log %s: delete: %w", l, err), cerr)
	}
	if err := syncDir(m.cfg.Dir); err != nil {
		return errors.Join(fmt.Errorf("log %s: delete: %w", l, err), cerr)
	}
	if err := os.RemoveAll(gone); err != nil {
		return errors.Join(fmt.Errorf("log %s: delete: %w", l, err), cerr)
	}
	if cerr != nil {
		// The bytes are gone: a failed flush of them no longer matters.
		l.logger.Warn("closing a deleted partition", "err", cerr)
	}
	l.logger.Info("partition deleted", "dir", l.dir)
	return nil
}

// Dir returns the log's partition directory, where the replication layer
// keeps its per-partition files beside the segments.
func (l *Log) Dir() string { return l.dir }

// Recovered reports whether the log was opened after a crash: it had
// segments and no clean-shutdown marker vouching for their end, so what it
// had not fsynced may be gone (a power loss) though its recovery found
// every remaining message whole. A log opened after a clean shutdown, or
// created empty, is not recovered.
func (l *Log) Recovered() bool { return l.recovered }

// WrittenEnd returns the offset just past the last appended byte, flushed or
// not: a replica's log end offset (LEO). It is at or after EndOffset. It is
// 0 if the log is closed.
func (l *Log) WrittenEnd() wire.Offset {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0
	}
	return l.active.start + wire.Offset(l.size)
}

// ReadWritten is Read bounded by the written end instead of the flushed end:
// what a leader sends a follower. Replication, not the flush, makes those
// bytes safe (the replication layer decides what consumers may see).
func (l *Log) ReadWritten(offset wire.Offset, maxBytes int) (Region, error) {
	// Load the written end before read loads the view, so that the view's
	// segments hold every byte below it (see read).
	return l.read(offset, maxBytes, l.WrittenEnd(), false)
}

// ReadWrittenAtBoundary is ReadWritten for an offset the caller knows to
// start a message (or to be the written end): the leader of a replicated
// partition serving a follower at a position it checked before, or at the
// end of bytes it sent that follower. It skips the check of the message
// at offset (two preads and a CRC), which a follower fetching as fast as
// the leader appends would otherwise pay on every fetch. A wrong offset is
// not detected here: the follower's append of the bytes refuses them.
func (l *Log) ReadWrittenAtBoundary(offset wire.Offset, maxBytes int) (Region, error) {
	return l.read(offset, maxBytes, l.WrittenEnd(), true)
}

// ReadTo is Read bounded by limit (clipped to the flushed end): what a
// consumer of a replicated partition sees, limit being the high watermark.
// An offset between limit and the written end yields an empty region, as
// 0.8's leader answers a fetch between its HW and its log end: a new
// leader's HW (and its flushed end) may trail the old leader's for a
// moment, and a consumer that read up to the old one's must wait there,
// not be told its offset is out of range (and reset).
func (l *Log) ReadTo(offset wire.Offset, maxBytes int, limit wire.Offset) (Region, error) {
	end := l.EndOffset()
	if limit > end || limit < 0 {
		limit = end
	}
	if offset > limit && offset <= l.WrittenEnd() {
		return Region{}, nil
	}
	return l.read(offset, maxBytes, limit, false)
}

// Truncate drops every byte at and after offset to: the segments that start
// after it are deleted and the one holding it is cut there, fsynced and made
// the active segment. to must lie in [StartOffset, WrittenEnd]; the caller
// (the replication layer) makes sure it is a message boundary. Readers of the
// flushed end see it move back to to if it was beyond.
//
// Regions handed out before over the dropped bytes may come up short; the
// replication layer only truncates above what consumers may see.
func (l *Log) Truncate(to wire.Offset) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	v := l.view.Load()
	written := l.active.start + wire.Offset(l.size)
	if start := v.segs[0].start; to < start || to > written {
		return fmt.Errorf("log %s: truncate: %w", l, &OffsetOutOfRangeError{Requested: to, Start: start, End: written})
	}
	if to == written {
		return nil
	}
	i := v.find(to)
	seg := v.segs[i]
	size := int64(to - seg.start)
	if err := seg.file.Truncate(size); err != nil {
		return l.failLocked(fmt.Errorf("truncate %s to %d: %w", seg.path, size, err))
	}
	if err := seg.file.Sync(); err != nil {
		return l.failLocked(fmt.Errorf("fsync %s: %w", seg.path, err))
	}
	dead := append([]*segment(nil), v.segs[i+1:]...)
	segs := append([]*segment(nil), v.segs[:i+1]...)
	l.view.Store(&view{segs: segs, end: min(v.end, to)})
	if seg != l.active {
		l.firstAppend = time.Time{}
	}
	l.active, l.size, l.unflushed = seg, size, 0
	l.truncations++
	l.logger.Info("truncated", "offset", to, "dropped_bytes", written-to, "deleted_segments", len(dead))
	// Remove the dropped files under mu, so that a roll cannot recreate a
	// name before its old file is gone.
	return l.removeSegmentsLocked(dead, "truncate")
}

// removeSegmentsLocked unlinks segments taken out of the table, drops the
// table's reference to each (a file stays open until its last Region is
// released) and fsyncs the directory; the caller holds mu.
func (l *Log) removeSegmentsLocked(dead []*segment, what string) error {
	if len(dead) == 0 {
		return nil
	}
	var errs []error
	for _, s := range dead {
		if err := os.Remove(s.path); err != nil {
			errs = append(errs, fmt.Errorf("log %s: %s: %w", l, what, err))
		}
		if err := s.release(); err != nil {
			errs = append(errs, fmt.Errorf("log %s: %w", l, err))
		}
	}
	if err := syncDir(l.dir); err != nil {
		errs = append(errs, fmt.Errorf("log %s: %w", l, err))
	}
	return errors.Join(errs...)
}

// TruncateFullyAndStartAt drops every segment and starts the log again,
// empty, at offset start (0.8's Log.truncateFullyAndStartAt): a follower
// whose log ends below its leader's log start (retention deleted what it
// missed) cannot fetch what it lacks and starts over where the leader's log
// starts. The old files are removed before the new segment is made, so a
// crash in between leaves an empty log, which the follower refills the same
// way.
func (l *Log) TruncateFullyAndStartAt(start wire.Offset) error {
	if start < 0 {
		return fmt.Errorf("log %s: start over at %d: %w", l, start, &OffsetOutOfRangeError{Requested: start})
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	v := l.view.Load()
	if err := l.removeSegmentsLocked(v.segs, fmt.Sprintf("start over at %d", start)); err != nil {
		return l.failLocked(err)
	}
	seg, err := createSegment(l.dir, start, l.logger)
	if err != nil {
		return l.failLocked(err)
	}
	if err := syncDir(l.dir); err != nil {
		return l.failLocked(err)
	}
	l.view.Store(&view{segs: []*segment{seg}, end: start})
	l.active, l.size, l.unflushed, l.firstAppend = seg, 0, 0, time.Time{}
	l.truncations++
	l.logger.Info("started over", "offset", start, "deleted_segments", len(v.segs))
	return nil
}
