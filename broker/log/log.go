package log

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// CleanShutdownFile is the marker a log writes into its directory when it is
// closed cleanly. A log opened without it recovers its last segment; opening
// removes it, so that a later crash is noticed.
const CleanShutdownFile = ".kafka_cleanshutdown"

// Log is one partition: an append-only sequence of segment files in the
// directory "<topic>-<partition>" of log.dir. Get one from a Manager.
//
// Paper §3.1: "Every time a producer publishes a message to a partition, the
// broker simply appends the message to the last segment file." There is no
// per-message index: a table of segment start offsets, binary-searched,
// locates an offset.
//
// Concurrency: any number of goroutines may call any method. Appends are
// serialized by a mutex (the single writer); Read, StartOffset, EndOffset and
// OffsetsBefore take no lock: they read an immutable snapshot of the segment
// table, which the writer replaces (copy on write) when it rolls, flushes or
// deletes segments.
type Log struct {
	topic     string
	partition wire.Partition
	dir       string       // the partition directory
	cfg       *Config      // shared with the Manager; read-only
	clock     Clock        // cfg.Clock, or SystemClock
	logger    *slog.Logger // with the partition's name
	flushTime time.Duration
	retention time.Duration
	// recovered: the log was opened after a crash (no valid clean-shutdown
	// marker) and may have lost what it had not fsynced; set by openLog.
	recovered bool

	// view is what readers see; nil once the log is closed.
	view atomic.Pointer[view]

	// flushMu serializes flushes, so that a flush can fsync without
	// holding mu. Lock order: flushMu, then mu.
	flushMu sync.Mutex

	// The flusher goroutine (owned by the Log, started by openLog, stopped
	// by close) flushes when Append asks through flushReq.
	flushReq    chan struct{} // buffered 1; a pending request absorbs later ones
	stopFlusher chan struct{}
	flusherDone chan struct{}
	stopOnce    sync.Once

	// mu guards the writer's state below and every replacement of view.
	mu          sync.Mutex
	active      *segment  // the last segment, the one appended to
	size        int64     // bytes written to active
	unflushed   int       // messages appended since the last flush
	rolls       uint64    // number of rolls (a roll flushes and zeroes unflushed)
	lastFlush   time.Time // time of the last flush that wrote something
	firstAppend time.Time // time of the first append to active; zero if none since it was opened
	failed      error     // sticky: set by a failed write or fsync
	closed      bool
	truncations uint64 // number of Truncate and TruncateFullyAndStartAt calls

	// bound, if set, is the replication layer's retention bound
	// (BoundRetention).
	bound atomic.Pointer[func() wire.Offset]
}

// view is an immutable snapshot of a log's segment table.
type view struct {
	// segs are the segments by start offset; never empty; the last one is
	// the active segment. segs[i].start + size(segs[i]) == segs[i+1].start.
	segs []*segment
	// end is the flushed end: readers see the bytes [segs[0].start, end).
	// Paper §3.1: "a message is only exposed to the consumers after it is
	// flushed". Invariant: end >= the active segment's start.
	end wire.Offset
}

// String returns "<topic>-<partition>".
func (l *Log) String() string { return partitionDirName(l.topic, l.partition) }

// Topic returns the log's topic.
func (l *Log) Topic() string { return l.topic }

// Partition returns the log's partition number.
func (l *Log) Partition() wire.Partition { return l.partition }

// Append validates a message set and appends it whole to the active segment,
// rolling to a new segment first if the active one would grow beyond
// log.file.size or is older than log.roll.hours. It returns the offset of the
// set's first message.
//
// Every message is checked (size, magic, CRC, max.message.size); if any is
// bad, nothing is written and the error wraps wire.ErrInvalidMessage (and is
// a *wire.CorruptError naming the position within set). The set is written
// with one write to the page cache; it is fsynced, and becomes visible to
// readers, at the next flush: once log.flush.interval messages are unflushed
// Append asks the log's flusher goroutine for one (and does not wait for
// it); otherwise the time-based flush of Manager.Run, or Flush, does it.
//
// An empty set appends nothing. If a write fails for want of space (ENOSPC,
// EDQUOT), the partial write is truncated away and the error wraps
// ErrNoSpace; the log stays writable and a later append tries again.
//
// Deviation: in Kafka 0.7 a failed write goes up to the request and a
// partial write stays in the file until a recovery; here a full disk that is
// cleaned up needs no restart. If a
// write fails otherwise, or a flush fails, the log refuses all later appends:
// they return an error wrapping ErrFailed.
func (l *Log) Append(set []byte) (first wire.Offset, err error) {
	count, err := wire.Validate(set, l.cfg.MaxMessageSize)
	if err != nil {
		return 0, fmt.Errorf("log %s: append: %w", l, err)
	}
	return l.AppendValidated(set, count)
}

// AppendValidated is Append for a set its caller has already checked:
// wire.Validate(set, MaxMessageSize) returned count and no error (the
// server validates each produced set once, before it creates a partition
// for it). It does not look at the messages again.
func (l *Log) AppendValidated(set []byte, count int) (first wire.Offset, err error) {
	l.mu.Lock()
	if err := l.writableLocked(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	if count == 0 {
		first = l.active.start + wire.Offset(l.size)
		l.mu.Unlock()
		return first, nil
	}
	now := l.clock.Now()
	if l.shouldRollLocked(int64(len(set)), now) {
		if err := l.rollLocked(now); err != nil {
			l.mu.Unlock()
			return 0, err
		}
	}
	seg := l.active
	first = seg.start + wire.Offset(l.size)
	if _, err := seg.file.WriteAt(set, l.size); err != nil {
		// Take back a partial write, so the segment ends with its last
		// complete message; recovery would also drop it.
		err = fmt.Errorf("write %d bytes at %d of %s: %w", len(set), l.size, seg.path, err)
		terr := seg.file.Truncate(l.size)
		if terr == nil && isNoSpace(err) {
			// Not sticky: the log is intact, and the next append tries
			// again once space is freed.
			l.logger.Error("append refused: the file system is full; later appends try again", "err", err)
			l.mu.Unlock()
			return 0, fmt.Errorf("log %s: %w: %w", l, ErrNoSpace, err)
		}
		err = l.failLocked(errors.Join(err, terr))
		l.mu.Unlock()
		return 0, err
	}
	l.size += int64(len(set))
	if l.firstAppend.IsZero() {
		l.firstAppend = now
	}
	l.unflushed += count
	if l.unflushed >= l.cfg.FlushInterval {
		select {
		case l.flushReq <- struct{}{}:
		default: // a flush is already asked for; it will cover this set
		}
	}
	l.mu.Unlock()
	return first, nil
}

// startFlusher starts the goroutine that runs the flushes Append asks for.
//
// Deviation: Kafka 0.7 fsyncs inside append, holding the log's lock, so the
// producer's request waits for the disk. Here the log's flusher goroutine
// fsyncs while appends go on, and each fsync covers everything written
// before it began; an append costs one write to the page cache. What readers
// see is unchanged: a message becomes visible only after an fsync covers it.
func (l *Log) startFlusher() {
	l.flushReq = make(chan struct{}, 1)
	l.stopFlusher = make(chan struct{})
	l.flusherDone = make(chan struct{})
	go func() {
		defer close(l.flusherDone)
		for {
			select {
			case <-l.stopFlusher:
				return
			case <-l.flushReq:
				// A failed write or fsync is sticky (failLocked
				// logged it) and the next Append returns it.
				if err := l.Flush(); err != nil && !errors.Is(err, ErrFailed) && !errors.Is(err, ErrClosed) {
					l.logger.Error("flush", "err", err)
				}
			}
		}
	}()
}

// stopFlusherAndWait stops the flusher goroutine and waits for it to end.
func (l *Log) stopFlusherAndWait() {
	l.stopOnce.Do(func() { close(l.stopFlusher) })
	<-l.flusherDone
}

// shouldRollLocked reports whether the active segment must be rolled before
// n more bytes are appended at now. An empty segment is never rolled: a set
// larger than log.file.size goes whole into an empty segment.
//
// Deviation: Kafka 0.7 rolls after an append has taken the segment past
// log.file.size; this log rolls before, so segments do not exceed it.
func (l *Log) shouldRollLocked(n int64, now time.Time) bool {
	if l.size == 0 {
		return false
	}
	if l.size+n > l.cfg.FileSize {
		return true
	}
	// As 0.7: the age counts from the segment's first append.
	return !l.firstAppend.IsZero() && now.Sub(l.firstAppend) > l.cfg.RollInterval
}

// rollLocked flushes the active segment and starts a new, empty one at the
// end of the log, fsyncing the directory.
func (l *Log) rollLocked(now time.Time) error {
	old := l.active
	began := time.Now()
	if err := old.file.Sync(); err != nil {
		return l.failLocked(fmt.Errorf("fsync %s: %w", old.path, err))
	}
	if o := l.cfg.Observer; o != nil {
		o.Flushed(l, time.Since(began))
	}
	end := old.start + wire.Offset(l.size)
	v := l.view.Load()
	l.unflushed, l.lastFlush = 0, now
	l.rolls++
	seg, err := createSegment(l.dir, end, l.logger)
	if err != nil {
		l.view.Store(&view{segs: v.segs, end: end})
		return fmt.Errorf("log %s: roll: %w", l, err)
	}
	segs := make([]*segment, len(v.segs)+1)
	copy(segs, v.segs)
	segs[len(v.segs)] = seg
	l.view.Store(&view{segs: segs, end: end})
	l.active, l.size, l.firstAppend = seg, 0, time.Time{}
	l.logger.Debug("rolled", "segment", filepath.Base(seg.path))
	return nil
}

// Flush fsyncs the active segment and makes everything appended so far
// visible to readers. The fsync runs without holding the append lock, so
// appends proceed meanwhile (they become visible at the next flush).
func (l *Log) Flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if err := l.writableLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	seg, end, n, rolls := l.active, l.active.start+wire.Offset(l.size), l.unflushed, l.rolls
	if end == l.view.Load().end {
		l.unflushed = 0
		l.mu.Unlock()
		return nil
	}
	seg.refs.Add(1) // seg is in the table, which holds a reference
	l.mu.Unlock()

	began := time.Now()
	err := seg.file.Sync()
	if o := l.cfg.Observer; o != nil && err == nil {
		o.Flushed(l, time.Since(began))
	}
	rerr := seg.release()

	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		return l.failLocked(fmt.Errorf("fsync %s: %w", seg.path, err))
	}
	if rerr != nil {
		return fmt.Errorf("log %s: %w", l, rerr)
	}
	if l.rolls == rolls { // else a roll flushed and zeroed the count
		l.unflushed -= n
	}
	l.lastFlush = l.clock.Now()
	if v := l.view.Load(); end > v.end {
		l.view.Store(&view{segs: v.segs, end: end})
	}
	return nil
}

// flushIfDue flushes if something is unflushed and the topic's flush
// interval has passed since the last flush (Kafka 0.7's flush scheduler).
func (l *Log) flushIfDue(now time.Time) error {
	l.mu.Lock()
	due := !l.closed && l.failed == nil && l.unflushed > 0 && now.Sub(l.lastFlush) >= l.flushTime
	l.mu.Unlock()
	if !due {
		return nil
	}
	return l.Flush()
}

// isNoSpace reports a write that failed for want of space: ENOSPC or
// EDQUOT.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// writableLocked returns the error that forbids writing, if any.
func (l *Log) writableLocked() error {
	if l.closed {
		return fmt.Errorf("log %s: %w", l, ErrClosed)
	}
	return l.failed
}

// failLocked makes err the log's sticky error and returns it.
func (l *Log) failLocked(err error) error {
	l.failed = &failedError{cause: fmt.Errorf("log %s: %w", l, err)}
	l.logger.Error("log failed; it refuses writes until reopened", "err", err)
	return l.failed
}

// close flushes the log, lets go of its segments (each file is closed when
// its last Region is released) and, unless a write failed, writes the
// clean-shutdown marker.
func (l *Log) close() error {
	l.stopFlusherAndWait()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	if l.failed != nil {
		errs = append(errs, l.failed)
	} else if err := l.active.file.Sync(); err != nil {
		errs = append(errs, fmt.Errorf("log %s: fsync %s: %w", l, l.active.path, err))
	}
	v := l.view.Swap(nil)
	for _, s := range v.segs {
		if err := s.release(); err != nil {
			errs = append(errs, fmt.Errorf("log %s: %w", l, err))
		}
	}
	if len(errs) == 0 {
		if err := writeMarker(l.dir, l.active.start+wire.Offset(l.size)); err != nil {
			errs = append(errs, fmt.Errorf("log %s: %w", l, err))
		}
	}
	return errors.Join(errs...)
}

// writeMarker creates the clean-shutdown marker in dir, durably, recording
// end, the log end it vouches for (in decimal). Kafka 0.7's marker is empty;
// it only checks that the file exists.
//
// Deviation: the marker records the end, so that a log changed after the
// clean shutdown (a tail cut or added to) is recovered at the next open.
func writeMarker(dir string, end wire.Offset) error {
	path := filepath.Join(dir, CleanShutdownFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write clean-shutdown marker: %w", err)
	}
	_, err = f.Write(strconv.AppendInt(nil, int64(end), 10))
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("write clean-shutdown marker: %w", err)
	}
	return syncDir(dir)
}
