package log

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/netdb11/kafka/broker/wire"
)

func TestWrittenEndAndReadWritten(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.FlushInterval = 1000 // nothing flushes by itself
	l := getLog(t, openManager(t, cfg), "t", 0)
	set := messageSet(0, 3, 10)
	appendOnly(t, l, set)
	if got, want := l.WrittenEnd(), wire.Offset(len(set)); got != want {
		t.Fatalf("WrittenEnd = %d, want %d", got, want)
	}
	if l.EndOffset() != 0 {
		t.Fatalf("EndOffset = %d before a flush", l.EndOffset())
	}
	r, err := l.ReadWritten(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.AppendTo(nil)
	r.Release()
	if err != nil || !bytes.Equal(got, set) {
		t.Fatalf("ReadWritten = %d bytes, %v; want the unflushed set", len(got), err)
	}
	if _, err := l.ReadWritten(wire.Offset(len(set))+1, 10); !errors.Is(err, wire.ErrOffsetOutOfRange) {
		t.Fatalf("ReadWritten past the end = %v", err)
	}
}

func TestReadTo(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.FlushInterval = 1 << 20 // appends stay unflushed until mustFlush
	l := getLog(t, openManager(t, cfg), "t", 0)
	a, b := messageSet(0, 2, 10), messageSet(2, 2, 10)
	mustAppend(t, l, a)
	mustAppend(t, l, b)
	hw := wire.Offset(len(a))
	r, err := l.ReadTo(0, 1<<20, hw)
	if err != nil || r.Len != int64(hw) {
		t.Fatalf("ReadTo(0, hw=%d) = %d bytes, %v", hw, r.Len, err)
	}
	r.Release()
	// Past the HW but inside the log: nothing yet, not an error.
	r, err = l.ReadTo(hw+wire.Offset(len(b)), 1<<20, hw)
	if err != nil || r.Len != 0 {
		t.Fatalf("ReadTo past hw = %d bytes, %v", r.Len, err)
	}
	if _, err := l.ReadTo(l.WrittenEnd()+1, 10, hw); !errors.Is(err, wire.ErrOffsetOutOfRange) {
		t.Fatalf("ReadTo past the log = %v", err)
	}

	// Past the flushed end but inside the written log (a new leader that
	// has not flushed what the old one's consumers read): nothing yet, not
	// an error. Before, OffsetOutOfRange: the fault suite's SimpleConsumer
	// reset to the end and polled backwards (stop-leader, safe, seed 1).
	c := messageSet(4, 3, 10)
	if _, err := l.Append(c); err != nil {
		t.Fatal(err)
	}
	if l.WrittenEnd() <= l.EndOffset() {
		t.Fatalf("written end %d, flushed end %d: the append was flushed", l.WrittenEnd(), l.EndOffset())
	}
	r, err = l.ReadTo(l.WrittenEnd(), 1<<20, l.WrittenEnd())
	if err != nil || r.Len != 0 {
		t.Fatalf("ReadTo between the flushed and the written end = %d bytes, %v", r.Len, err)
	}
}

// TestTruncate cuts a log in its active segment and across segments, and
// checks that appends continue at the cut, on disk and after a reopen.
func TestTruncate(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.FileSize = 100
	m := openManager(t, cfg)
	l := getLog(t, m, "t", 0)
	var sets [][]byte
	var ends []wire.Offset
	for i := range 6 {
		s := messageSet(uint64(i), 2, 20) // 58 bytes: one set per segment
		sets = append(sets, s)
		mustAppend(t, l, s)
		ends = append(ends, l.WrittenEnd())
	}
	if n := len(segmentFiles(t, l.Dir())); n != 6 {
		t.Fatalf("%d segments, want 6", n)
	}
	// Cut in the middle of the third segment (after its first message).
	cut := ends[1] + 29
	if err := l.Truncate(cut); err != nil {
		t.Fatal(err)
	}
	if l.WrittenEnd() != cut || l.EndOffset() != cut {
		t.Fatalf("after Truncate(%d): written %d, flushed %d", cut, l.WrittenEnd(), l.EndOffset())
	}
	if n := len(segmentFiles(t, l.Dir())); n != 3 {
		t.Fatalf("%d segment files after truncation, want 3", n)
	}
	want := append(append(append([]byte(nil), sets[0]...), sets[1]...), sets[2][:29]...)
	if got := diskBytes(t, l.Dir()); !bytes.Equal(got, want) {
		t.Fatalf("disk holds %d bytes, want %d", len(got), len(want))
	}
	next := messageSet(100, 1, 20)
	if off := mustAppend(t, l, next); off != cut {
		t.Fatalf("append after truncation at %d, want %d", off, cut)
	}
	want = append(want, next...)
	if got := readAll(t, l); !bytes.Equal(got, want) {
		t.Fatal("log content after truncate+append differs")
	}
	// Out of range and no-op truncations.
	if err := l.Truncate(l.WrittenEnd() + 1); !errors.Is(err, wire.ErrOffsetOutOfRange) {
		t.Fatalf("Truncate past the end = %v", err)
	}
	if err := l.Truncate(l.WrittenEnd()); err != nil {
		t.Fatalf("Truncate at the end = %v", err)
	}
	// Reopen: the same bytes.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := openManager(t, cfg)
	l2 := getLog(t, m2, "t", 0)
	if got := readAll(t, l2); !bytes.Equal(got, want) {
		t.Fatal("log content after reopen differs")
	}
	// Truncate to the very start.
	if err := l2.Truncate(0); err != nil || l2.WrittenEnd() != 0 {
		t.Fatalf("Truncate(0) = %v, end %d", err, l2.WrittenEnd())
	}
	if off := mustAppend(t, l2, next); off != 0 {
		t.Fatalf("append after Truncate(0) at %d", off)
	}
}

// TestDelete removes a partition: its directory goes, the manager forgets
// it, a Region read before keeps its bytes until released, the other
// partitions stay, and a reopened manager does not bring it back. A
// deletion a crash interrupted after the rename is finished by Open.
func TestDelete(t *testing.T) {
	cfg, _ := testConfig(t)
	m, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := getLog(t, m, "t", 0)
	keep, err := m.GetOrCreateAssigned("t", 1)
	if err != nil {
		t.Fatal(err)
	}
	set := messageSet(0, 3, 10)
	mustAppend(t, l, set)
	mustAppend(t, keep, set)
	r, err := l.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Delete("t", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(l.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory after Delete: %v", err)
	}
	if _, err := os.Stat(l.Dir() + deletingSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("renamed directory after Delete: %v", err)
	}
	if _, err := m.Get("t", 0); !errors.Is(err, wire.ErrWrongPartition) {
		t.Fatalf("Get after Delete = %v", err)
	}
	if got, err := r.AppendTo(nil); err != nil || !bytes.Equal(got, set) {
		t.Fatalf("region read before Delete = %d bytes, %v", len(got), err)
	}
	r.Release()
	if err := m.Delete("t", 0); !errors.Is(err, wire.ErrWrongPartition) {
		t.Fatalf("second Delete = %v", err)
	}
	// A crash after the rename of another deletion.
	if err := os.Mkdir(filepath.Join(cfg.Dir, "u-3"+deletingSuffix), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, "u-3"+deletingSuffix, "00000000000000000000.kafka"), set, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := openManager(t, cfg)
	if _, err := m2.Get("t", 0); !errors.Is(err, wire.ErrWrongPartition) {
		t.Fatalf("Get of the deleted partition after reopen = %v", err)
	}
	kept, err := m2.Get("t", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, kept); !bytes.Equal(got, set) {
		t.Fatalf("the other partition after reopen: %d bytes", len(got))
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, "u-3"+deletingSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("leftover of an interrupted deletion after Open: %v", err)
	}
	if err := m2.Delete("t", 0); !errors.Is(err, wire.ErrWrongPartition) {
		t.Fatalf("Delete of an unknown partition = %v", err)
	}
}

// TestTruncateFullyAndStartAt: the log drops every segment and starts
// again, empty, at the given offset (a follower below its leader's log
// start); appends continue there, reads see only them, and a reopen finds
// the same (reopen test).
func TestTruncateFullyAndStartAt(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.FileSize = 100
	m := openManager(t, cfg)
	l := getLog(t, m, "t", 0)
	for i := range 4 {
		mustAppend(t, l, messageSet(uint64(i), 2, 20))
	}
	const start = 5000
	if err := l.TruncateFullyAndStartAt(start); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != start || l.WrittenEnd() != start || l.EndOffset() != start {
		t.Fatalf("after starting over at %d: start %d, written %d, flushed %d", start, l.StartOffset(), l.WrittenEnd(), l.EndOffset())
	}
	if files := segmentFiles(t, l.Dir()); len(files) != 1 || filepath.Base(files[0]) != wire.SegmentName(start) {
		t.Fatalf("segment files %v, want only %s", files, wire.SegmentName(start))
	}
	next := messageSet(9, 3, 17)
	if off := mustAppend(t, l, next); off != start {
		t.Fatalf("append after starting over at %d", off)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := getLog(t, openManager(t, cfg), "t", 0)
	if l2.StartOffset() != start || l2.WrittenEnd() != start+wire.Offset(len(next)) {
		t.Fatalf("reopened: start %d, end %d", l2.StartOffset(), l2.WrittenEnd())
	}
	if got := readAll(t, l2); !bytes.Equal(got, next) {
		t.Fatal("reopened log holds other bytes")
	}
	if err := l2.TruncateFullyAndStartAt(-1); !errors.Is(err, wire.ErrOffsetOutOfRange) {
		t.Fatalf("starting over at -1: %v", err)
	}
}
