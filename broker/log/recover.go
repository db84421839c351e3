package log

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/netdb11/kafka/broker/wire"
)

// recoverMaxMessageSize is the largest size field recovery accepts: the
// format's own limit (a positive int32), not max.message.size. A message
// stored under a larger max.message.size than today's is valid (its CRC
// says so) and recovery keeps it, as Kafka 0.7's FileMessageSet.recover,
// which checks sizes against the file and CRCs only. A torn tail's garbage
// size field is caught by the file's end or the CRC.
const recoverMaxMessageSize = math.MaxInt32

// recoverBufSize is the read buffer of recovery's scan; it grows for a
// message larger than this.
const recoverBufSize = 1 << 20

// openLog opens the partition directory dir (creating its first segment if
// it has none) and recovers it:
//
//   - every file named like a segment is opened and the segments, sorted by
//     start, must be contiguous; otherwise the error wraps ErrSegmentGap and
//     names the two files;
//   - unless the clean-shutdown marker is present and records the end the
//     last segment has (an older, empty marker does not count), the last
//     segment is
//     scanned message by message and truncated at the first message that is
//     cut short or fails its CRC (the torn tail of a crash), then fsynced;
//     max.message.size does not apply (see recoverMaxMessageSize);
//   - the marker is removed (durably), so that a crash from now on is
//     noticed at the next open.
//
// As Kafka 0.7, only the last segment is scanned: a segment becomes
// non-last only after it was fsynced by a roll.
func openLog(dir, topic string, partition wire.Partition, cfg *Config) (l *Log, err error) {
	l = &Log{
		topic:     topic,
		partition: partition,
		dir:       dir,
		cfg:       cfg,
		clock:     cfg.Clock,
		flushTime: cfg.flushIntervalOf(topic),
		retention: cfg.retentionOf(topic),
	}
	l.logger = cfg.Logger.With("log", l.String())

	segs, err := openSegments(dir, l.logger)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			for _, s := range segs {
				err = errors.Join(err, s.release())
			}
		}
	}()
	sizes := make([]int64, len(segs))
	for i, s := range segs {
		fi, err := s.file.Stat()
		if err != nil {
			return nil, fmt.Errorf("log %s: %w", l, err)
		}
		sizes[i] = fi.Size()
	}
	for i := 0; i+1 < len(segs); i++ {
		if end := segs[i].start + wire.Offset(sizes[i]); end != segs[i+1].start {
			return nil, fmt.Errorf("%w in partition %s: %s (%d bytes) ends at offset %d, but the next file %s starts at %d",
				ErrSegmentGap, l, segs[i].path, sizes[i], end, segs[i+1].path, segs[i+1].start)
		}
	}

	marker := filepath.Join(dir, CleanShutdownFile)
	vouched, readErr := os.ReadFile(marker)
	hasMarker := readErr == nil
	if readErr != nil && !errors.Is(readErr, fs.ErrNotExist) {
		return nil, fmt.Errorf("log %s: %w", l, readErr)
	}
	clean := false
	if hasMarker && len(segs) > 0 {
		end := segs[len(segs)-1].start + wire.Offset(sizes[len(sizes)-1])
		want, err := strconv.ParseInt(strings.TrimSpace(string(vouched)), 10, 64)
		switch {
		case err != nil:
			l.logger.Info("the clean-shutdown marker records no log end; recovering", "marker", string(vouched))
		case wire.Offset(want) != end:
			l.logger.Warn("the log does not end where the clean-shutdown marker says; recovering", "marker_end", want, "end", end)
		default:
			clean = true
		}
	}

	if len(segs) == 0 {
		s, err := createSegment(dir, 0, l.logger)
		if err != nil {
			return nil, fmt.Errorf("log %s: %w", l, err)
		}
		segs, sizes = append(segs, s), append(sizes, 0)
	} else if !clean {
		l.recovered = true
		last := len(segs) - 1
		size, err := recoverSegment(segs[last], sizes[last], recoverMaxMessageSize, recoverBufSize, l.logger)
		if err != nil {
			return nil, fmt.Errorf("log %s: recover: %w", l, err)
		}
		sizes[last] = size
	}
	if hasMarker {
		if err := os.Remove(marker); err != nil {
			return nil, fmt.Errorf("log %s: remove clean-shutdown marker: %w", l, err)
		}
		if err := syncDir(dir); err != nil {
			return nil, fmt.Errorf("log %s: %w", l, err)
		}
	}

	last := segs[len(segs)-1]
	l.active, l.size = last, sizes[len(sizes)-1]
	l.lastFlush = l.clock.Now()
	l.view.Store(&view{segs: segs, end: last.start + wire.Offset(l.size)})
	l.startFlusher()
	return l, nil
}

// openSegments opens every segment file of dir, sorted by start offset.
// Files not ending in ".kafka" are ignored.
func openSegments(dir string, logger *slog.Logger) (segs []*segment, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	defer func() {
		if err != nil {
			for _, s := range segs {
				err = errors.Join(err, s.release())
			}
			segs = nil
		}
	}()
	for _, e := range entries {
		name := e.Name()
		if filepath.Ext(name) != wire.SegmentSuffix {
			continue
		}
		path := filepath.Join(dir, name)
		start, err := parseSegmentName(name)
		if err != nil {
			return segs, fmt.Errorf("%w (in %s)", err, dir)
		}
		if !e.Type().IsRegular() {
			return segs, fmt.Errorf("log: segment %s is not a regular file", path)
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return segs, fmt.Errorf("log: open segment: %w", err)
		}
		segs = append(segs, newSegment(path, start, f, logger))
	}
	slices.SortFunc(segs, func(a, b *segment) int { return cmp.Compare(a.start, b.start) })
	return segs, nil
}

// recoverSegment scans the size bytes of s message by message, truncates the
// file after the last valid message and fsyncs it, and returns the new size.
// bufSize is the initial read buffer (small in tests, to cross its edges).
func recoverSegment(s *segment, size int64, maxMessageSize, bufSize int, logger *slog.Logger) (int64, error) {
	valid, reason, err := scanValid(s.file, s.start, size, maxMessageSize, bufSize)
	if err != nil {
		return 0, err
	}
	if valid < size {
		logger.Warn("truncating the torn tail of the last segment",
			"file", s.path, "at", s.start+wire.Offset(valid), "dropped_bytes", size-valid, "reason", reason)
		if err := s.file.Truncate(valid); err != nil {
			return 0, fmt.Errorf("truncate %s: %w", s.path, err)
		}
	}
	// What survived a crash may be only in the page cache; readers are
	// about to see it as flushed.
	if err := s.file.Sync(); err != nil {
		return 0, fmt.Errorf("fsync %s: %w", s.path, err)
	}
	return valid, nil
}

// scanValid returns the length of the longest prefix of the first size bytes
// of f that is a sequence of complete, valid messages, none with a size field
// above maxMessageSize, and why the rest is not (empty if there is no rest).
// It reads f with explicit positions, in chunks of bufSize bytes or of one
// message if larger.
func scanValid(f *os.File, base wire.Offset, size int64, maxMessageSize, bufSize int) (valid int64, reason string, err error) {
	buf := make([]byte, max(bufSize, wire.SizeLen))
	var pos int64 // file position of buf[0]; every message before it is valid
	have := 0     // bytes of buf holding file data
	for {
		want := min(int64(len(buf)-have), size-pos-int64(have))
		if want > 0 {
			n, err := f.ReadAt(buf[have:have+int(want)], pos+int64(have))
			have += n
			if err != nil && !(err == io.EOF && n > 0) {
				if err == io.EOF { // the file shrank under us
					return pos, "file shorter than its size", nil
				}
				return 0, "", fmt.Errorf("read %s at %d: %w", f.Name(), pos+int64(have), err)
			}
		}
		it := wire.NewIterator(buf[:have], base+wire.Offset(pos))
		it.SetMaxMessageSize(maxMessageSize)
		for it.Next() {
		}
		if err := it.Err(); err != nil {
			var ce *wire.CorruptError
			if errors.As(err, &ce) {
				return int64(ce.Pos - base), ce.Reason, nil
			}
			return pos + int64(it.ValidBytes()), err.Error(), nil
		}
		consumed := it.ValidBytes()
		need, partial := it.Partial()
		end := pos + int64(consumed)
		switch {
		case !partial && pos+int64(have) == size:
			return size, "", nil
		case partial && end+int64(need) > size:
			return end, fmt.Sprintf("message at offset %d needs %d bytes, %d remain", base+wire.Offset(end), need, size-end), nil
		}
		copy(buf, buf[consumed:have])
		have -= consumed
		pos = end
		if partial && need > len(buf) {
			// A message larger than the buffer is checked as it streams
			// by, so that a torn tail's garbage size field (up to 2 GiB)
			// costs no allocation.
			reason, err := streamCheck(f, pos, int64(need), buf)
			if err != nil {
				return 0, "", err
			}
			if reason != "" {
				return pos, reason, nil
			}
			pos += int64(need)
			have = 0
		}
	}
}

// streamCheck checks the message of total bytes (size field included) at
// position pos of f, reading its payload through buf, and returns why it is
// not valid ("" if it is), with the reasons the wire iterator gives.
func streamCheck(f *os.File, pos, total int64, buf []byte) (reason string, err error) {
	var hdr [wire.SizeLen + wire.HeaderLenV1]byte
	n := min(int64(len(hdr)), total)
	if _, err := f.ReadAt(hdr[:n], pos); err != nil {
		return "", fmt.Errorf("read %s at %d: %w", f.Name(), pos, err)
	}
	size := total - wire.SizeLen
	body := int64(wire.SizeLen + wire.MagicLen)
	switch magic := hdr[wire.SizeLen]; magic {
	case wire.MagicV0:
	case wire.MagicV1:
		if size < wire.HeaderLenV1 {
			return fmt.Sprintf("size %d is smaller than a magic 1 header", size), nil
		}
		if c := wire.Codec(hdr[body] & wire.CodecMask); c > wire.CodecSnappy {
			return fmt.Sprintf("unknown compression codec %d", c), nil
		}
		body += wire.AttributesLen
	default:
		return fmt.Sprintf("unknown magic %d", magic), nil
	}
	stored := binary.BigEndian.Uint32(hdr[body:])
	crc := crc32.NewIEEE()
	for at := pos + body + wire.CRCLen; at < pos+total; {
		chunk := buf[:min(int64(len(buf)), pos+total-at)]
		if _, err := f.ReadAt(chunk, at); err != nil {
			return "", fmt.Errorf("read %s at %d: %w", f.Name(), at, err)
		}
		crc.Write(chunk)
		at += int64(len(chunk))
	}
	if got := crc.Sum32(); got != stored {
		return fmt.Sprintf("crc mismatch: stored %08x, computed %08x", stored, got), nil
	}
	return "", nil
}
