package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/netdb11/kafka/broker/wire"
)

// The corruption fixture: ten 49-byte messages in two segments,
// [0,294) holding messages 0-5 and [294,490) holding messages 6-9.
const (
	fixtureMsgs    = 10
	fixtureMsgSize = 49
	fixtureSeg1    = 294
	fixtureEnd     = 490
)

func fixtureMessage(i int) []byte { return messageSet(uint64(i), 1, fixtureMsgSize-wire.Overhead) }

func fixturePrefix(k int) []byte {
	var out []byte
	for i := range k {
		out = append(out, fixtureMessage(i)...)
	}
	return out
}

// writeFixture writes the fixture through a Manager and closes it cleanly.
func writeFixture(t *testing.T, cfg Config) string {
	t.Helper()
	cfg.FileSize = 300
	m, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := getLog(t, m, "t", 0)
	for i := range fixtureMsgs {
		mustAppend(t, l, fixtureMessage(i))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cfg.Dir, "t-0")
	if got, want := segmentFiles(t, dir), []string{wire.SegmentName(0), wire.SegmentName(fixtureSeg1)}; !slices.Equal(got, want) {
		t.Fatalf("fixture segments %v, want %v", got, want)
	}
	return dir
}

func TestRecoveryFromCorruption(t *testing.T) {
	last := wire.SegmentName(fixtureSeg1)
	// Each case corrupts the fixture's directory and names how many
	// messages must survive (-1: Open must fail with wantErr).
	tests := []struct {
		name    string
		corrupt func(t *testing.T, dir string)
		keep    int
		wantErr error
	}{
		{"missing marker only", func(t *testing.T, dir string) {}, 10, nil},
		{"truncate mid-message", func(t *testing.T, dir string) {
			truncate(t, filepath.Join(dir, last), fixtureEnd-fixtureSeg1-10)
		}, 9, nil},
		{"truncate inside a size field", func(t *testing.T, dir string) {
			truncate(t, filepath.Join(dir, last), 2*fixtureMsgSize+2)
		}, 8, nil},
		{"garbage tail", func(t *testing.T, dir string) {
			appendFile(t, filepath.Join(dir, last), bytes.Repeat([]byte{0xab, 0x17, 0x00, 0x42}, 40))
		}, 10, nil},
		{"garbage tail that looks like a message start", func(t *testing.T, dir string) {
			bogus := binary.BigEndian.AppendUint32(nil, 30)
			appendFile(t, filepath.Join(dir, last), append(bogus, make([]byte, 30)...))
		}, 10, nil},
		{"flipped crc byte", func(t *testing.T, dir string) {
			flip(t, filepath.Join(dir, last), 2*fixtureMsgSize+wire.SizeLen+wire.MagicLen+2)
		}, 8, nil},
		{"flipped payload byte of the last message", func(t *testing.T, dir string) {
			flip(t, filepath.Join(dir, last), fixtureEnd-fixtureSeg1-1)
		}, 9, nil},
		{"zeroed tail", func(t *testing.T, dir string) {
			zero(t, filepath.Join(dir, last), fixtureEnd-fixtureSeg1-64, 64)
		}, 8, nil},
		{"zero-filled extension", func(t *testing.T, dir string) {
			appendFile(t, filepath.Join(dir, last), make([]byte, 4096))
		}, 10, nil},
		{"oversize size field", func(t *testing.T, dir string) {
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], wire.DefaultMaxMessageSize+1)
			writeAt(t, filepath.Join(dir, last), 3*fixtureMsgSize, b[:])
		}, 9, nil},
		{"negative size field", func(t *testing.T, dir string) {
			writeAt(t, filepath.Join(dir, last), 0, []byte{0xff, 0xff, 0xff, 0xf0})
		}, 6, nil},
		{"unknown magic", func(t *testing.T, dir string) {
			writeAt(t, filepath.Join(dir, last), fixtureMsgSize+wire.SizeLen, []byte{9})
		}, 7, nil},
		{"empty last segment after a roll", func(t *testing.T, dir string) {
			appendFile(t, filepath.Join(dir, wire.SegmentName(fixtureEnd)), nil)
		}, 10, nil},
		{"gap between segments", func(t *testing.T, dir string) {
			rename(t, filepath.Join(dir, last), filepath.Join(dir, wire.SegmentName(fixtureSeg1+1)))
		}, -1, ErrSegmentGap},
		{"overlapping segments", func(t *testing.T, dir string) {
			rename(t, filepath.Join(dir, last), filepath.Join(dir, wire.SegmentName(fixtureSeg1-49)))
		}, -1, ErrSegmentGap},
		{"missing middle segment", func(t *testing.T, dir string) {
			appendFile(t, filepath.Join(dir, wire.SegmentName(1000)), fixtureMessage(0))
		}, -1, ErrSegmentGap},
		{"badly named segment", func(t *testing.T, dir string) {
			appendFile(t, filepath.Join(dir, "123.kafka"), nil)
		}, -1, ErrBadSegmentName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := testConfig(t)
			dir := writeFixture(t, cfg)
			if err := os.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil {
				t.Fatal(err)
			}
			tt.corrupt(t, dir)

			m, err := Open(cfg)
			if tt.keep < 0 {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Open: %v, want %v", err, tt.wantErr)
				}
				t.Logf("Open: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { _ = m.Close() })
			l, err := m.Get("t", 0)
			if err != nil {
				t.Fatal(err)
			}
			want := fixturePrefix(tt.keep)
			if got := readAll(t, l); !bytes.Equal(got, want) {
				t.Fatalf("recovered %d bytes (%d messages), want %d bytes (%d messages)",
					len(got), len(payloadsOf(t, got)), len(want), tt.keep)
			}
			if got := diskBytes(t, dir); !bytes.Equal(got, want) {
				t.Fatalf("files hold %d bytes after recovery, want %d", len(got), len(want))
			}
			// It takes appends at the recovered end, and they survive
			// a clean reopen.
			extra := fixtureMessage(99)
			if off := mustAppend(t, l, extra); off != wire.Offset(len(want)) {
				t.Fatalf("append after recovery at %d, want %d", off, len(want))
			}
			want = append(want, extra...)
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			m2 := openManager(t, cfg)
			l2, err := m2.Get("t", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, l2); !bytes.Equal(got, want) {
				t.Fatal("bytes differ after the second reopen")
			}
		})
	}
}

// With the marker present and recording the end the last segment has, the
// segment is trusted, as Kafka 0.7: the scan costs a read of the whole
// segment, which a clean shutdown avoids (a flipped byte inside it goes
// unnoticed). A marker whose end differs (bytes added or cut after the
// clean shutdown: issue 11, case 9) or that records no end (0.7's empty
// marker) makes the log recover.
func TestCleanShutdownMarkerVouchesForTheEnd(t *testing.T) {
	last := wire.SegmentName(fixtureSeg1)
	flipLastByte := func(t *testing.T, path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-1] ^= 0xff
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name          string
		change        func(t *testing.T, dir string)
		wantEnd       wire.Offset
		wantRecovered bool
	}{
		{"untouched", func(*testing.T, string) {}, fixtureEnd, false},
		{"flipped byte, same end: trusted", func(t *testing.T, dir string) { flipLastByte(t, filepath.Join(dir, last)) }, fixtureEnd, false},
		{"bytes added after the shutdown", func(t *testing.T, dir string) { appendFile(t, filepath.Join(dir, last), []byte{1, 2, 3}) }, fixtureEnd, true},
		{"tail cut after the shutdown", func(t *testing.T, dir string) {
			truncate(t, filepath.Join(dir, last), int64(fixtureEnd-fixtureSeg1)-3)
		}, fixtureEnd - wire.Offset(len(fixtureMessage(fixtureMsgs-1))), true},
		{"empty marker (0.7's)", func(t *testing.T, dir string) {
			flipLastByte(t, filepath.Join(dir, last))
			if err := os.WriteFile(filepath.Join(dir, CleanShutdownFile), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, fixtureEnd - wire.Offset(len(fixtureMessage(fixtureMsgs-1))), true},
		{"no marker (a crash)", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil {
				t.Fatal(err)
			}
		}, fixtureEnd, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := testConfig(t)
			dir := writeFixture(t, cfg)
			tt.change(t, dir)
			m := openManager(t, cfg)
			l, err := m.Get("t", 0)
			if err != nil {
				t.Fatal(err)
			}
			if l.EndOffset() != tt.wantEnd {
				t.Fatalf("EndOffset %d, want %d", l.EndOffset(), tt.wantEnd)
			}
			if l.Recovered() != tt.wantRecovered {
				t.Fatalf("Recovered() = %v, want %v", l.Recovered(), tt.wantRecovered)
			}
		})
	}
}

// TestRecoveryKeepsMessagesAboveTodaysMaxMessageSize stores messages under
// one max.message.size, crashes (no marker), and reopens with a smaller
// one: recovery keeps them all, since they are valid under the format
// (issue 11, case 7; before, it truncated them as a torn tail). Appends are
// still bound by the new limit.
func TestRecoveryKeepsMessagesAboveTodaysMaxMessageSize(t *testing.T) {
	cfg, _ := testConfig(t)
	m := openManager(t, cfg)
	l := getLog(t, m, "t", 0)
	var want []byte
	for i := range 10 {
		set := messageSet(uint64(i), 1, 2000)
		want = append(want, set...)
		mustAppend(t, l, set)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(cfg.Dir, "t-0", CleanShutdownFile)); err != nil {
		t.Fatal(err)
	}
	cfg.MaxMessageSize = 1000
	m2 := openManager(t, cfg)
	l2, err := m2.Get("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l2); !bytes.Equal(got, want) {
		t.Fatalf("recovered %d bytes, want all %d", len(got), len(want))
	}
	if _, err := l2.Append(messageSet(99, 1, 2000)); !errors.Is(err, wire.ErrInvalidMessage) {
		t.Fatalf("append above the new max.message.size: %v", err)
	}
}

// TestScanValidAcrossBufferEdges checks the chunked scan against one pass of
// the iterator over the whole file, for buffers smaller than a message.
func TestScanValidAcrossBufferEdges(t *testing.T) {
	var data []byte
	var starts []int
	for i := range 20 {
		starts = append(starts, len(data))
		data = append(data, messageSet(uint64(i), 1, i*13)...)
	}
	good := len(data)
	data = append(data, 0, 0, 1, 0, 0, 0) // a message that claims 256 bytes
	// Variants damage one message: its payload (a CRC mismatch), its magic;
	// messages larger than the buffer are checked as they stream by.
	flip := func(at int) []byte {
		d := append([]byte(nil), data...)
		d[at] ^= 0x40
		return d
	}
	variants := [][]byte{data, flip(starts[15] + 20), flip(starts[12] + wire.SizeLen), flip(starts[19] - 1)}
	for vi, data := range variants {
		path := filepath.Join(t.TempDir(), wire.SegmentName(0))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, bufSize := range []int{1, 4, 5, 17, 100, 1 << 20} {
			for _, size := range []int{0, 3, 30, good - 1, good, len(data)} {
				want := int64(longestValidPrefix(data[:size], wire.DefaultMaxMessageSize))
				got, _, err := scanValid(f, 0, int64(size), wire.DefaultMaxMessageSize, bufSize)
				if err != nil || got != want {
					t.Errorf("variant %d: scanValid(size %d, buf %d) = %d, %v; want %d", vi, size, bufSize, got, err, want)
				}
			}
		}
		f.Close()
	}
}

// longestValidPrefix is the reference for recovery: one iterator pass.
func longestValidPrefix(data []byte, maxSize int) int {
	it := wire.NewIterator(data, 0)
	it.SetMaxMessageSize(maxSize)
	for it.Next() {
	}
	return it.ValidBytes()
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func flip(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writeAt(t, path, off, []byte{b[off] ^ 0x20})
}

func zero(t *testing.T, path string, off int64, n int) {
	t.Helper()
	writeAt(t, path, off, make([]byte, n))
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}
