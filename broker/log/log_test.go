package log

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/broker/wire"
)

func TestAppendReturnsOffsetsAndReadsBackTheSameBytes(t *testing.T) {
	cfg, _ := testConfig(t)
	l := getLog(t, openManager(t, cfg), "t", 0)

	var want []byte
	var off wire.Offset
	for i := range 5 {
		set := messageSet(uint64(i*3), 3, 50+i)
		if got := mustAppend(t, l, set); got != off {
			t.Fatalf("append %d at %d, want %d", i, got, off)
		}
		off += wire.Offset(len(set))
		want = append(want, set...)
	}
	if got := l.EndOffset(); got != off {
		t.Fatalf("EndOffset %d, want %d", got, off)
	}
	if got := readAll(t, l); !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes that differ from the %d appended", len(got), len(want))
	}
	if got := diskBytes(t, l.dir); !bytes.Equal(got, want) {
		t.Fatal("segment file differs from the appended bytes")
	}
}

func TestEmptySetAppendsNothing(t *testing.T) {
	cfg, _ := testConfig(t)
	l := getLog(t, openManager(t, cfg), "t", 0)
	mustAppend(t, l, messageSet(0, 2, 10))
	off, err := l.Append(nil)
	if err != nil || off != l.EndOffset() {
		t.Fatalf("Append(nil) = %d, %v; want %d, nil", off, err, l.EndOffset())
	}
}

func TestMessagesAreHiddenUntilFlushed(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.FlushInterval = 3
	l := getLog(t, openManager(t, cfg), "t", 0)

	one := messageSet(0, 1, 20)
	appendOnly(t, l, one)
	appendOnly(t, l, one)
	if got := l.EndOffset(); got != 0 {
		t.Fatalf("EndOffset %d after 2 of 3 messages, want 0 (unflushed)", got)
	}
	r, err := l.Read(0, 1000)
	if err != nil || r.Len != 0 {
		t.Fatalf("Read(0) of an unflushed log = %d bytes, %v; want empty", r.Len, err)
	}
	if _, err := l.Read(wire.Offset(len(one)), 1000); !errors.Is(err, wire.ErrOffsetOutOfRange) {
		t.Fatalf("Read past the flushed end: %v, want OffsetOutOfRange", err)
	}
	// The third message reaches log.flush.interval: the flusher runs.
	appendOnly(t, l, one)
	want := wire.Offset(3 * len(one))
	wait.For(t, "the flush after 3 messages", func() bool { return l.EndOffset() == want })
	// A set counts all its messages.
	appendOnly(t, l, messageSet(0, 3, 20))
	want = wire.Offset(6 * len(one))
	wait.For(t, "the flush after a set of 3", func() bool { return l.EndOffset() == want })
	// Below the interval nothing is flushed until Flush.
	appendOnly(t, l, one)
	if got := l.EndOffset(); got != want {
		t.Fatalf("EndOffset %d after 1 message, want %d", got, want)
	}
	mustFlush(t, l)
	if got, want := l.EndOffset(), wire.Offset(7*len(one)); got != want {
		t.Fatalf("EndOffset %d after Flush, want %d", got, want)
	}
}

func TestReadRegions(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.FileSize = 100
	l := getLog(t, openManager(t, cfg), "t", 0)
	msg := messageSet(0, 1, 31) // 40 bytes; two per 100-byte segment
	for range 5 {
		mustAppend(t, l, msg)
	}
	// Segments: [0,80) [80,160) [160,200).
	if got, want := segmentFiles(t, l.dir), []string{wire.SegmentName(0), wire.SegmentName(80), wire.SegmentName(160)}; !slices.Equal(got, want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	tests := []struct {
		offset   wire.Offset
		maxBytes int
		wantPos  int64
		wantLen  int64
		wantFile string
	}{
		{0, 1000, 0, 80, wire.SegmentName(0)},     // clipped to the segment end
		{0, 50, 0, 50, wire.SegmentName(0)},       // ends mid-message: not cut at a boundary
		{40, 1000, 40, 40, wire.SegmentName(0)},   // second message of the first segment
		{80, 1000, 0, 80, wire.SegmentName(80)},   // a segment boundary reads the next segment
		{160, 1000, 0, 40, wire.SegmentName(160)}, // active segment, clipped to the end
		{200, 1000, 0, 0, ""},                     // at the end: empty
		{40, 0, 0, 0, ""},                         // zero bytes asked: empty
	}
	// Not at a message start: refused, naming the reason (wire code 2).
	for _, off := range []wire.Offset{170, 41, 199} {
		if _, err := l.Read(off, 5); !errors.Is(err, ErrNotBoundary) || !errors.Is(err, wire.ErrInvalidMessage) {
			t.Fatalf("Read(%d) inside a message: %v, want ErrNotBoundary", off, err)
		}
	}
	for _, tt := range tests {
		r, err := l.Read(tt.offset, tt.maxBytes)
		if err != nil {
			t.Fatalf("Read(%d, %d): %v", tt.offset, tt.maxBytes, err)
		}
		file := ""
		if r.File != nil {
			file = filepath.Base(r.File.Name())
		}
		if r.Pos != tt.wantPos || r.Len != tt.wantLen || file != tt.wantFile {
			t.Errorf("Read(%d, %d) = %s [%d, +%d), want %s [%d, +%d)", tt.offset, tt.maxBytes, file, r.Pos, r.Len, tt.wantFile, tt.wantPos, tt.wantLen)
		}
		if r.Len > 0 {
			got, err := r.AppendTo(nil)
			if err != nil {
				t.Fatal(err)
			}
			all := bytes.Repeat(msg, 5)
			if want := all[tt.offset : int64(tt.offset)+tt.wantLen]; !bytes.Equal(got, want) {
				t.Errorf("Read(%d, %d) bytes differ", tt.offset, tt.maxBytes)
			}
		}
		r.Release()
		r.Release() // harmless
	}
}

func TestReadOutOfRange(t *testing.T) {
	cfg, clock := testConfig(t)
	cfg.FileSize = 100
	l := getLog(t, openManager(t, cfg), "t", 0)
	for range 5 {
		mustAppend(t, l, messageSet(0, 1, 31))
	}
	// Expire the first segment so the log starts at 80.
	setModTime(t, filepath.Join(l.dir, wire.SegmentName(0)), clock.Now().Add(-cfg.RetentionTime-time.Hour))
	if n, err := l.DeleteOldSegments(); err != nil || n != 1 {
		t.Fatalf("DeleteOldSegments = %d, %v; want 1, nil", n, err)
	}
	for _, off := range []wire.Offset{0, 79, 201, 1 << 40, -1} {
		_, err := l.Read(off, 100)
		var oor *OffsetOutOfRangeError
		if !errors.As(err, &oor) {
			t.Fatalf("Read(%d): %v, want *OffsetOutOfRangeError", off, err)
		}
		if oor.Requested != off || oor.Start != 80 || oor.End != 200 {
			t.Errorf("Read(%d): %+v, want range [80, 200]", off, *oor)
		}
		if wire.CodeOf(err) != wire.CodeOffsetOutOfRange {
			t.Errorf("Read(%d): code %v, want OffsetOutOfRange", off, wire.CodeOf(err))
		}
	}
	if _, err := l.Read(80, -1); wire.CodeOf(err) != wire.CodeInvalidFetchSize {
		t.Errorf("Read with maxBytes -1: %v, want InvalidFetchSize", err)
	}
}

func TestRollBySize(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.FileSize = 1000
	l := getLog(t, openManager(t, cfg), "t", 0)
	set := messageSet(0, 3, 91) // 300 bytes
	for range 4 {
		mustAppend(t, l, set)
	}
	// 900 bytes fit in the first segment, the fourth set would exceed 1000.
	want := []string{wire.SegmentName(0), wire.SegmentName(900)}
	if got := segmentFiles(t, l.dir); !slices.Equal(got, want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	// A set larger than log.file.size goes whole into a fresh segment.
	big := messageSet(0, 1, 1500)
	if off := mustAppend(t, l, big); off != 1200 {
		t.Fatalf("big set at %d, want 1200", off)
	}
	mustAppend(t, l, set)
	want = []string{wire.SegmentName(0), wire.SegmentName(900), wire.SegmentName(1200), wire.SegmentName(1200 + 1509)}
	if got := segmentFiles(t, l.dir); !slices.Equal(got, want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	for _, name := range want[:2] {
		if fi, err := os.Stat(filepath.Join(l.dir, name)); err != nil || fi.Size() > cfg.FileSize {
			t.Fatalf("segment %s: %v, size above %d", name, err, cfg.FileSize)
		}
	}
}

func TestRollByAgeOfFirstAppend(t *testing.T) {
	cfg, clock := testConfig(t)
	cfg.RollInterval = time.Hour
	l := getLog(t, openManager(t, cfg), "t", 0)
	set := messageSet(0, 1, 10)
	mustAppend(t, l, set)
	clock.Advance(time.Hour) // not more than the interval yet
	mustAppend(t, l, set)
	if got := len(segmentFiles(t, l.dir)); got != 1 {
		t.Fatalf("%d segments at exactly log.roll.hours, want 1", got)
	}
	clock.Advance(time.Millisecond)
	off := mustAppend(t, l, set)
	if got, want := segmentFiles(t, l.dir), []string{wire.SegmentName(0), wire.SegmentName(off)}; !slices.Equal(got, want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	// The new segment's age counts from its own first append.
	clock.Advance(59 * time.Minute)
	mustAppend(t, l, set)
	if got := len(segmentFiles(t, l.dir)); got != 2 {
		t.Fatalf("%d segments, want 2", got)
	}
	if got := readAll(t, l); !bytes.Equal(got, bytes.Repeat(set, 4)) {
		t.Fatal("bytes differ across the roll")
	}
}

func TestAppendRejectsInvalidSetsWhole(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.MaxMessageSize = 100
	l := getLog(t, openManager(t, cfg), "t", 0)
	good := messageSet(0, 2, 20)
	mustAppend(t, l, good)

	badCRC := messageSet(0, 3, 20)
	badCRC[len(badCRC)-1] ^= 1
	oversize := append(messageSet(0, 1, 20), wire.AppendMessage(nil, make([]byte, 100))...)
	truncated := messageSet(0, 2, 20)
	truncated = truncated[:len(truncated)-3]
	badMagic := messageSet(0, 1, 20)
	badMagic[4] = 7
	tests := []struct {
		name string
		set  []byte
		pos  wire.Offset
	}{
		{"crc", badCRC, 58},
		{"oversize", oversize, 29},
		{"truncated", truncated, 29},
		{"magic", badMagic, 0},
		{"short size field", []byte{0, 0}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := l.Append(tt.set)
			wantErrIs(t, err, wire.ErrInvalidMessage)
			var ce *wire.CorruptError
			if !errors.As(err, &ce) || ce.Pos != tt.pos {
				t.Fatalf("error %v, want a CorruptError at %d", err, tt.pos)
			}
			if got := diskBytes(t, l.dir); !bytes.Equal(got, good) {
				t.Fatal("a rejected set changed the segment")
			}
		})
	}
	// The log still takes good sets.
	if off := mustAppend(t, l, good); off != wire.Offset(len(good)) {
		t.Fatalf("append after rejections at %d", off)
	}
}

func TestFailedWriteIsSticky(t *testing.T) {
	cfg, _ := testConfig(t)
	m, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := getLog(t, m, "t", 0)
	good := messageSet(0, 2, 20)
	mustAppend(t, l, good)
	// Break the file under the log: the next write fails.
	if err := l.active.file.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = l.Append(good)
	wantErrIs(t, err, ErrFailed)
	wantErrIs(t, err, os.ErrClosed)
	// It stays failed, even for valid appends and flushes, and says so.
	_, err = l.Append(good)
	wantErrIs(t, err, ErrFailed)
	wantErrIs(t, l.Flush(), ErrFailed)
	if info := l.Info(); !strings.Contains(info.Failed, "file already closed") {
		t.Fatalf("Info().Failed = %q, want the cause", info.Failed)
	}
	// Readers still see what was flushed before.
	if l.EndOffset() != wire.Offset(len(good)) {
		t.Fatalf("EndOffset %d", l.EndOffset())
	}
	// Close reports the failure and writes no clean-shutdown marker.
	if err := m.Close(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Close: %v, want ErrFailed", err)
	}
	if _, err := os.Stat(filepath.Join(l.dir, CleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatalf("marker after a failed log: %v", err)
	}
	// Reopening recovers and takes writes again.
	m2 := openManager(t, cfg)
	l2 := getLog(t, m2, "t", 0)
	mustAppend(t, l2, good)
	if got := readAll(t, l2); !bytes.Equal(got, append(good, good...)) {
		t.Fatal("bytes after reopen differ")
	}
}

func TestClosedLogRefusesEverything(t *testing.T) {
	cfg, _ := testConfig(t)
	m, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := getLog(t, m, "t", 0)
	mustAppend(t, l, messageSet(0, 1, 10))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = l.Append(messageSet(0, 1, 10))
	wantErrIs(t, err, ErrClosed)
	wantErrIs(t, l.Flush(), ErrClosed)
	_, err = l.Read(0, 10)
	wantErrIs(t, err, ErrClosed)
	_, err = m.GetOrCreate("t", 0)
	wantErrIs(t, err, ErrClosed)
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestHundredThousandMessagesTake20900000Bytes(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.FlushInterval = 500
	cfg.FileSize = 4 << 20
	m := openManager(t, cfg)
	l := getLog(t, m, "t", 0)
	for i := 0; i < 100000; i += 50 {
		appendOnly(t, l, messageSet(uint64(i), 50, 200))
	}
	mustFlush(t, l)
	if got := l.EndOffset(); got != 20900000 {
		t.Fatalf("EndOffset %d, want 20,900,000", got)
	}
	var total int64
	for _, name := range segmentFiles(t, l.dir) {
		fi, err := os.Stat(filepath.Join(l.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
	}
	if total != 20900000 {
		t.Fatalf("segment files hold %d bytes, want 20,900,000", total)
	}
}

func setModTime(t testing.TB, path string, mt time.Time) {
	t.Helper()
	if err := os.Chtimes(path, mt, mt); err != nil {
		t.Fatal(err)
	}
}
