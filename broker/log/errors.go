package log

import (
	"errors"
	"fmt"

	"github.com/netdb11/kafka/broker/wire"
)

// The sentinel errors of the package. Errors returned by Manager and Log wrap
// one of these, or one of broker/wire's sentinels when the error has a wire
// code (so wire.CodeOf maps them for a response); compare with errors.Is.
var (
	// ErrClosed means the Manager or Log has been closed.
	ErrClosed = errors.New("log: closed")

	// ErrSegmentGap means the segment files of a partition are not
	// contiguous: some segment's start plus its size is not the next
	// segment's start. Bytes are missing (or overlap) and the log refuses to
	// open; the message names both files. Paper §3.1: the offset of every
	// message is a byte position, so a gap cannot be papered over.
	ErrSegmentGap = errors.New("log: segment files are not contiguous")

	// ErrBadSegmentName means a file ending in ".kafka" in a partition
	// directory is not named by a 20-digit start offset.
	ErrBadSegmentName = errors.New("log: bad segment file name")

	// ErrNotWritable means log.dir cannot be written (a read-only file
	// system, missing permissions): Open refuses it, naming the directory
	// and the cause.
	ErrNotWritable = errors.New("log: log.dir is not writable")

	// ErrLocked means another process (another broker) holds the lock on
	// log.dir (see LockFile); the message names the holder.
	ErrLocked = errors.New("log: log.dir is in use by another process")

	// ErrNoSpace means an append found the file system full (ENOSPC or
	// EDQUOT). It is not sticky: the partial write is taken back, so the
	// log ends with its last complete message, and a later append tries
	// again. The returned error wraps it and the system error.
	ErrNoSpace = errors.New("log: no space left for the append")

	// ErrNotBoundary means a read asked for an offset inside the log that
	// is not the start of a message. It wraps wire.ErrInvalidMessage, so
	// a FETCH gets InvalidMessage (code 2).
	ErrNotBoundary = fmt.Errorf("log: offset is not a message boundary: %w", wire.ErrInvalidMessage)

	// ErrFailed means an earlier write or fsync of this log failed (other
	// than for want of space, see ErrNoSpace). The log then refuses appends
	// and flushes (the error is sticky) until it is reopened, when recovery truncates whatever the failed write left. The
	// returned error wraps both ErrFailed and the original cause.
	ErrFailed = errors.New("log: an earlier write failed; reopen the log")
)

// OffsetOutOfRangeError reports a Read at an offset outside the readable
// range [Start, End] of a log. It wraps wire.ErrOffsetOutOfRange (wire code
// 1), so errors.Is(err, wire.ErrOffsetOutOfRange) holds.
type OffsetOutOfRangeError struct {
	// Requested is the offset asked for.
	Requested wire.Offset
	// Start is the first offset of the log (the first segment's start).
	Start wire.Offset
	// End is the flushed end of the log: the largest offset one may read
	// at (it yields an empty region).
	End wire.Offset
}

// Error says which offset was asked for and which range is valid.
func (e *OffsetOutOfRangeError) Error() string {
	return fmt.Sprintf("log: offset %d is out of range [%d, %d]", e.Requested, e.Start, e.End)
}

// Unwrap returns wire.ErrOffsetOutOfRange.
func (e *OffsetOutOfRangeError) Unwrap() error { return wire.ErrOffsetOutOfRange }

// failedError is the sticky error of a log: it wraps ErrFailed and the cause.
type failedError struct{ cause error }

func (e *failedError) Error() string   { return ErrFailed.Error() + ": " + e.cause.Error() }
func (e *failedError) Unwrap() []error { return []error{ErrFailed, e.cause} }
