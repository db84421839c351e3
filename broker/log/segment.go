package log

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/netdb11/kafka/broker/wire"
)

// parseSegmentName returns the start offset named by a segment file name
// (wire.SegmentName).
func parseSegmentName(name string) (wire.Offset, error) {
	start, ok := wire.ParseSegmentName(name)
	if !ok {
		return 0, fmt.Errorf("%w: %q is not %d digits (an offset below 2^63) followed by %q", ErrBadSegmentName, name, wire.SegmentNameDigits, wire.SegmentSuffix)
	}
	return start, nil
}

// segment is one file of a partition: the bytes of the log from start on.
//
// A segment is reference counted: the log's segment table holds one
// reference while the segment is in it, and every Region (and every internal
// user outside the log's lock) holds one more. The file is closed when the
// count drops to zero, so retention may unlink a segment that a reader is
// still sending from; the reader keeps its open file until Release.
type segment struct {
	start  wire.Offset // offset of the first byte; immutable
	path   string      // full path of the file; immutable
	file   *os.File    // opened read-write; used only with explicit positions
	refs   atomic.Int32
	logger *slog.Logger
}

// newSegment wraps an open file, holding the table's reference.
func newSegment(path string, start wire.Offset, f *os.File, logger *slog.Logger) *segment {
	s := &segment{start: start, path: path, file: f, logger: logger}
	s.refs.Store(1)
	return s
}

// createSegment creates the empty segment file for start in dir and fsyncs
// dir, so the new file survives a crash. An existing file is an error: the
// log never reuses a name it did not just delete.
func createSegment(dir string, start wire.Offset, logger *slog.Logger) (*segment, error) {
	path := filepath.Join(dir, wire.SegmentName(start))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log: create segment: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return nil, errors.Join(err, f.Close(), os.Remove(path))
	}
	return newSegment(path, start, f, logger), nil
}

// tryAcquire takes a reference unless the segment has already been let go
// of by everyone (then its file is closed or closing, and the caller must
// look again at the log's current table).
func (s *segment) tryAcquire() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last one closes the file and returns the
// error of that close.
func (s *segment) release() error {
	switch n := s.refs.Add(-1); {
	case n == 0:
		if err := s.file.Close(); err != nil {
			return fmt.Errorf("close segment: %w", err)
		}
	case n < 0:
		// A double release is a bug in this package; Region.Release is
		// idempotent, so callers outside it cannot cause it.
		s.logger.Error("segment released more often than acquired", "file", s.path, "refs", n)
	}
	return nil
}

// syncDir fsyncs a directory, making the creation, removal or renaming of
// its entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("log: sync directory: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("log: sync directory %s: %w", dir, err)
	}
	return nil
}
