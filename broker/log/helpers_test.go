package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// fakeClock is a Clock and Ticker driven by the test.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers map[time.Duration]chan time.Time
	made    chan time.Duration // receives each new ticker's period
}

func newFakeClock() *fakeClock {
	// Start at the real time, so that the modification times the kernel
	// gives files are "now" for the log too.
	return &fakeClock{now: time.Now(), tickers: make(map[time.Duration]chan time.Time), made: make(chan time.Duration, 16)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// NewTicker returns an unbuffered channel: a test's send on it returns only
// once the scheduler has taken the tick.
func (c *fakeClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time)
	c.tickers[d] = ch
	c.made <- d
	return ch, func() {}
}

func (c *fakeClock) ticker(t *testing.T, d time.Duration) chan time.Time {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.tickers[d]
	if !ok {
		t.Fatalf("no ticker of %v", d)
	}
	return ch
}

// testConfig is a config in a fresh directory with a fake clock and a
// flush after every message.
func testConfig(t testing.TB) (Config, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.Clock = clock
	cfg.FlushInterval = 1
	return cfg, clock
}

func openManager(t testing.TB, cfg Config) *Manager {
	t.Helper()
	m, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

func getLog(t testing.TB, m *Manager, topic string, partition wire.Partition) *Log {
	t.Helper()
	l, err := m.GetOrCreate(topic, partition)
	if err != nil {
		t.Fatalf("GetOrCreate(%q, %d): %v", topic, partition, err)
	}
	return l
}

// payload returns a payload of n bytes that starts with seq.
func payload(seq uint64, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(seq*7 + uint64(i))
	}
	if n >= 8 {
		binary.BigEndian.PutUint64(p, seq)
	}
	return p
}

// messageSet encodes count messages of size-byte payloads numbered from seq.
func messageSet(seq uint64, count, size int) []byte {
	var set []byte
	for i := range count {
		set = wire.AppendMessage(set, payload(seq+uint64(i), size))
	}
	return set
}

// mustAppend appends set and flushes, so that it is visible at once (the
// flushes Append asks for run on the log's flusher goroutine).
func mustAppend(t testing.TB, l *Log, set []byte) wire.Offset {
	t.Helper()
	off, err := l.Append(set)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	mustFlush(t, l)
	return off
}

// appendOnly appends set without flushing.
func appendOnly(t testing.TB, l *Log, set []byte) wire.Offset {
	t.Helper()
	off, err := l.Append(set)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return off
}

func mustFlush(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// readAll reads the log from its start to its flushed end, region by region.
func readAll(t testing.TB, l *Log) []byte {
	t.Helper()
	var out []byte
	for off := l.StartOffset(); ; {
		r, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if r.Len == 0 {
			return out
		}
		out, err = r.AppendTo(out)
		r.Release()
		if err != nil {
			t.Fatalf("AppendTo: %v", err)
		}
		off += wire.Offset(r.Len)
	}
}

// segmentFiles lists the segment file names of a partition directory.
func segmentFiles(t testing.TB, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*"+wire.SegmentSuffix))
	if err != nil {
		t.Fatal(err)
	}
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	return names
}

// diskBytes concatenates the segment files of a partition directory.
func diskBytes(t testing.TB, dir string) []byte {
	t.Helper()
	var out []byte
	for _, name := range segmentFiles(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// payloadsOf decodes a set that must be entirely valid.
func payloadsOf(t testing.TB, set []byte) [][]byte {
	t.Helper()
	var out [][]byte
	it := wire.NewIterator(set, 0)
	for it.Next() {
		out = append(out, it.Message().Payload)
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	if need, ok := it.Partial(); ok {
		t.Fatalf("iterate: partial message of %d bytes at %d", need, it.ValidBytes())
	}
	return out
}

func equalPayloads(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func wantErrIs(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want one wrapping %v", err, target)
	}
}
