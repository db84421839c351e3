package log

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/netdb11/kafka/broker/wire"
)

// fuzzMaxMessageSize is small so that the fuzzer reaches the oversize rule.
const fuzzMaxMessageSize = 1000

// fuzzTempDir is a fresh directory on tmpfs (/dev/shm) if there is one, else
// t.TempDir(). The fuzzers test recovery's and append's logic, not
// durability; on tmpfs an fsync costs nothing and they run ten times faster.
func fuzzTempDir(t *testing.T) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "kafka-log-fuzz-"); err == nil {
			t.Cleanup(func() {
				if err := os.RemoveAll(dir); err != nil {
					t.Error(err)
				}
			})
			return dir
		}
	}
	return t.TempDir()
}

// fuzzConfig is testConfig in a fuzzTempDir.
func fuzzConfig(t *testing.T) Config {
	cfg := DefaultConfig()
	cfg.Dir = fuzzTempDir(t)
	cfg.Clock = newFakeClock()
	cfg.FlushInterval = 1
	cfg.MaxMessageSize = fuzzMaxMessageSize
	return cfg
}

// fuzzSeeds are valid encodings (and cuts of them) to start the fuzzers from.
func fuzzSeeds(f *testing.F) {
	f.Helper()
	plain := messageSet(0, 5, 40)
	compressed, err := wire.AppendCompressed(nil, wire.CodecGzip, messageSet(10, 3, 30))
	if err != nil {
		f.Fatal(err)
	}
	snappy, err := wire.AppendCompressed(nil, wire.CodecSnappy, messageSet(20, 3, 30))
	if err != nil {
		f.Fatal(err)
	}
	mixed := append(append(append([]byte(nil), plain...), compressed...), snappy...)
	for _, seed := range [][]byte{
		nil,
		plain,
		mixed,
		wire.AppendMessage(nil, nil),
		mixed[:len(mixed)-5],
		mixed[:len(plain)+3],
		append(append([]byte(nil), plain...), 0, 0, 0, 0, 0, 0),
		wire.AppendMessage(nil, make([]byte, fuzzMaxMessageSize)),
	} {
		f.Add(seed)
	}
}

// FuzzRecover writes arbitrary bytes as the last segment of a partition,
// after a valid first segment, and opens it without the clean-shutdown
// marker. Open must not fail or panic; the log must hold exactly the longest
// valid prefix; and it must take an append at that point.
func FuzzRecover(f *testing.F) {
	fuzzSeeds(f)
	first := messageSet(100, 2, 20)
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := fuzzConfig(t)
		dir := filepath.Join(cfg.Dir, "t-0")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		start := wire.Offset(len(first))
		if err := os.WriteFile(filepath.Join(dir, wire.SegmentName(0)), first, 0o644); err != nil {
			t.Fatal(err)
		}
		lastPath := filepath.Join(dir, wire.SegmentName(start))
		if err := os.WriteFile(lastPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		valid := longestValidPrefix(data, fuzzMaxMessageSize)

		// The chunked scan agrees with one iterator pass, whatever the
		// buffer size.
		if fl, err := os.Open(lastPath); err != nil {
			t.Fatal(err)
		} else {
			got, _, err := scanValid(fl, start, int64(len(data)), fuzzMaxMessageSize, 1+len(data)%23)
			if cerr := fl.Close(); cerr != nil {
				t.Fatal(cerr)
			}
			if err != nil || got != int64(valid) {
				t.Fatalf("scanValid = %d, %v; want %d", got, err, valid)
			}
		}

		m, err := Open(cfg)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer func() {
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
		}()
		l, err := m.Get("t", 0)
		if err != nil {
			t.Fatal(err)
		}
		// Open recovers by the format's limit, not max.message.size.
		opened := longestValidPrefix(data, recoverMaxMessageSize)
		want := append(append([]byte(nil), first...), data[:opened]...)
		if got := readAll(t, l); !bytes.Equal(got, want) {
			t.Fatalf("recovered %d bytes, want %d", len(got), len(want))
		}
		extra := messageSet(7, 1, 10)
		if off := mustAppend(t, l, extra); off != wire.Offset(len(want)) {
			t.Fatalf("append after recovery at %d, want %d", off, len(want))
		}
		if got := readAll(t, l); !bytes.Equal(got, append(want, extra...)) {
			t.Fatal("append after recovery reads back wrong")
		}
	})
}

// FuzzAppend appends arbitrary bytes as a message set: either the log
// refuses it whole (wire.ErrInvalidMessage, nothing written) or it stores
// and returns exactly those bytes.
func FuzzAppend(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := fuzzConfig(t)
		cfg.FileSize = 512
		m := openManager(t, cfg)
		l := getLog(t, m, "t", 0)
		before := messageSet(0, 3, 50)
		mustAppend(t, l, before)

		_, verr := wire.Validate(data, fuzzMaxMessageSize)
		off, err := l.Append(data)
		if (err == nil) != (verr == nil) {
			t.Fatalf("Append: %v, but wire.Validate: %v", err, verr)
		}
		want := before
		if err != nil {
			if !errors.Is(err, wire.ErrInvalidMessage) {
				t.Fatalf("Append: %v, want ErrInvalidMessage", err)
			}
		} else {
			if off != wire.Offset(len(before)) {
				t.Fatalf("Append at %d, want %d", off, len(before))
			}
			want = append(append([]byte(nil), before...), data...)
		}
		mustFlush(t, l)
		if got := readAll(t, l); !bytes.Equal(got, want) {
			t.Fatalf("log holds %d bytes, want %d", len(got), len(want))
		}
		if got := diskBytes(t, l.dir); !bytes.Equal(got, want) {
			t.Fatalf("files hold %d bytes, want %d", len(got), len(want))
		}
	})
}
