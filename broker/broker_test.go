package broker_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

// client is a minimal protocol client for these tests.
type client struct {
	t *testing.T
	c net.Conn
	b *brokertest.Broker
}

func dial(t *testing.T, b *brokertest.Broker) *client {
	t.Helper()
	c, err := net.Dial("tcp", b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return &client{t: t, c: c, b: b}
}

func (c *client) send(r *wire.Request) {
	c.t.Helper()
	if _, err := c.c.Write(wire.AppendRequest(nil, r)); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) response() (wire.ErrorCode, []byte) {
	c.t.Helper()
	var hdr [6]byte
	if _, err := io.ReadFull(c.c, hdr[:]); err != nil {
		c.t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:])-2)
	if _, err := io.ReadFull(c.c, body); err != nil {
		c.t.Fatal(err)
	}
	return wire.ErrorCode(int16(binary.BigEndian.Uint16(hdr[4:]))), body
}

func (c *client) fetch(topic string, partition wire.Partition, offset wire.Offset, max int32) (wire.ErrorCode, []byte) {
	c.t.Helper()
	c.send(&wire.Request{Type: wire.RequestFetch, Fetch: []wire.FetchRequest{{Topic: topic, Partition: partition, Offset: offset, MaxSize: max}}})
	return c.response()
}

func (c *client) offsets(topic string, partition wire.Partition, time int64, max int32) []wire.Offset {
	c.t.Helper()
	c.send(&wire.Request{Type: wire.RequestOffsets, Offsets: &wire.OffsetsRequest{Topic: topic, Partition: partition, Time: time, MaxOffsets: max}})
	code, body := c.response()
	offs, err := wire.DecodeOffsetsResponse(body)
	if code != wire.CodeNone || err != nil {
		c.t.Fatalf("offsets: code %v, %v", code, err)
	}
	return offs
}

// produce sends a PRODUCE, waits until the broker has handled it, and
// flushes so that it is visible to fetches.
func (c *client) produce(topic string, partition wire.Partition, set []byte) {
	c.t.Helper()
	c.send(&wire.Request{Type: wire.RequestProduce, Produce: []wire.ProduceRequest{{Topic: topic, Partition: partition, Messages: set}}})
	c.offsets("sync", 0, wire.LatestTime, 1)
	c.b.Flush(c.t)
}

func messages(n int, tag string) []byte {
	var payloads [][]byte
	for i := range n {
		payloads = append(payloads, []byte(fmt.Sprintf("%s-%d-%s", tag, i, strings.Repeat("x", 100))))
	}
	return wire.NewMessageSet(payloads...)
}

func TestProduceFetch(t *testing.T) {
	cfg := brokertest.Config()
	cfg.Log.NumPartitions = 3
	b := brokertest.Start(t, cfg)
	c := dial(t, b)
	set := messages(20, "a")
	for p := wire.Partition(0); p < 3; p++ {
		c.produce("events", p, set)
	}
	c.produce("events", 1, set)
	for p, want := range [][]byte{set, append(append([]byte(nil), set...), set...), set} {
		if code, body := c.fetch("events", wire.Partition(p), 0, 1<<20); code != wire.CodeNone || !bytes.Equal(body, want) {
			t.Fatalf("partition %d: code %v, %d bytes, want %d", p, code, len(body), len(want))
		}
	}
	if got := c.offsets("events", 1, wire.LatestTime, 1); !slices.Equal(got, []wire.Offset{2 * wire.Offset(len(set))}) {
		t.Fatalf("latest offset of events-1: %v", got)
	}
}

// A restarted broker serves everything it stored, at the same offsets.
func TestRestartKeepsEverything(t *testing.T) {
	cfg := brokertest.Config()
	cfg.Log.FileSize = 4000 // several segments
	b := brokertest.Start(t, cfg)
	c := dial(t, b)
	var all []byte
	for i := range 10 {
		set := messages(5, fmt.Sprint(i))
		c.produce("kept", 0, set)
		all = append(all, set...)
	}
	b2 := b.Restart(t)
	if b2.Addr != b.Addr {
		t.Fatalf("restarted on %s, not %s", b2.Addr, b.Addr)
	}
	for _, e := range mustReadDir(t, filepath.Join(b.Config.Log.Dir, "kept-0")) {
		if e == log.CleanShutdownFile {
			t.Fatalf("the marker of the clean shutdown is still there after the restart")
		}
	}
	c2 := dial(t, b2)
	if code, body := c2.fetch("kept", 0, 0, 1<<20); code != wire.CodeNone || !bytes.Equal(body, all[:len(body)]) || len(body) == 0 {
		t.Fatalf("after restart: code %v, %d bytes", code, len(body))
	}
	// Read it all back, segment after segment, as a consumer does.
	var got []byte
	for off := wire.Offset(0); off < wire.Offset(len(all)); {
		code, body := c2.fetch("kept", 0, off, 1500)
		it := wire.NewIterator(body, wire.Offset(off))
		for it.Next() {
		}
		if code != wire.CodeNone || it.Err() != nil || it.ValidBytes() == 0 {
			t.Fatalf("at %d: code %v, %v", off, code, it.Err())
		}
		got = append(got, body[:it.ValidBytes()]...)
		off = it.NextOffset()
	}
	if !bytes.Equal(got, all) {
		t.Fatalf("read back %d bytes, want %d", len(got), len(all))
	}
	if got := c2.offsets("kept", 0, wire.LatestTime, 1); got[0] != wire.Offset(len(all)) {
		t.Fatalf("latest offset %d, want %d", got[0], len(all))
	}
	if segs := c2.offsets("kept", 0, time.Now().Add(time.Hour).UnixMilli(), 100); len(segs) < 3 {
		t.Fatalf("expected several segments, offsets %v", segs)
	}
}

func mustReadDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// A graceful shutdown writes the clean-shutdown marker of every partition.
func TestStopWritesCleanShutdownMarker(t *testing.T) {
	cfg := brokertest.Config()
	cfg.Log.NumPartitions = 2
	b := brokertest.Start(t, cfg)
	c := dial(t, b)
	c.produce("m", 0, messages(3, "m"))
	c.produce("m", 1, messages(3, "m"))
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"m-0", "m-1"} {
		if _, err := os.Stat(filepath.Join(b.Config.Log.Dir, p, log.CleanShutdownFile)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := net.Dial("tcp", b.Addr); err == nil {
		t.Fatal("still accepting after Stop")
	}
}

// fakeClock drives time-based retention: Now is settable, and the log's
// schedulers tick when the test says so.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers map[time.Duration]chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Now(), tickers: make(map[time.Duration]chan time.Time)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time)
	c.tickers[d] = ch
	return ch, func() {}
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// tick fires the ticker of period d once; it returns when the scheduler
// has taken the tick.
func (c *fakeClock) tick(t *testing.T, d time.Duration) {
	t.Helper()
	var ch chan time.Time
	wait.For(t, "the scheduler's ticker", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		ch = c.tickers[d]
		return ch != nil
	})
	ch <- c.Now()
}

// Retention deletes old segments: the earliest offset moves forward and a
// fetch below it is OffsetOutOfRange, while the rest is still served.
func TestRetentionMovesEarliestOffset(t *testing.T) {
	clock := newFakeClock()
	cfg := brokertest.Config()
	cfg.Log.Clock = clock
	cfg.Log.FileSize = 1500      // about 3 sets per segment
	cfg.Log.RetentionSize = 3000 // of about 5.5 KB
	b := brokertest.Start(t, cfg)
	c := dial(t, b)
	var all []byte
	for i := range 12 {
		set := messages(4, fmt.Sprint(i))
		c.produce("r", 0, set)
		all = append(all, set...)
	}
	if got := c.offsets("r", 0, wire.EarliestTime, 1); got[0] != 0 {
		t.Fatalf("earliest before retention: %v", got)
	}
	clock.tick(t, cfg.Log.CleanupInterval)
	var earliest wire.Offset
	wait.For(t, "retention by size", func() bool {
		earliest = c.offsets("r", 0, wire.EarliestTime, 1)[0]
		return earliest > 0
	})
	if code, _ := c.fetch("r", 0, 0, 100); code != wire.CodeOffsetOutOfRange {
		t.Fatalf("fetch below the earliest offset: code %v", code)
	}
	// (A fetch stops at the end of its segment.)
	if code, body := c.fetch("r", 0, earliest, 1<<20); code != wire.CodeNone || len(body) == 0 || !bytes.Equal(body, all[earliest:earliest+wire.Offset(len(body))]) {
		t.Fatalf("fetch from the earliest offset %d: code %v, %d bytes", earliest, code, len(body))
	}

	// Past log.retention.hours every segment goes; the log starts afresh at
	// its end offset.
	clock.advance(cfg.Log.RetentionTime + time.Hour)
	clock.tick(t, cfg.Log.CleanupInterval)
	wait.For(t, "retention by age", func() bool {
		return c.offsets("r", 0, wire.EarliestTime, 1)[0] == wire.Offset(len(all))
	})
	if code, body := c.fetch("r", 0, wire.Offset(len(all)), 100); code != wire.CodeNone || len(body) != 0 {
		t.Fatalf("fetch at the end: code %v, %d bytes", code, len(body))
	}
}

// fakeRegistrar records what the broker registers.
type fakeRegistrar struct {
	mu     sync.Mutex
	calls  []string
	failOn string
}

func (r *fakeRegistrar) Register(id wire.BrokerID, host string, port int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf("broker %d %s:%d", id, host, port))
	if r.failOn == "broker" {
		return errors.New("registry down")
	}
	return nil
}

func (r *fakeRegistrar) RegisterTopic(topic string, partitions int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf("topic %s %d", topic, partitions))
	return nil
}

func (r *fakeRegistrar) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// Paper §3.2: the broker registers itself, the topics it holds at start and
// each topic created later.
func TestRegistration(t *testing.T) {
	reg := &fakeRegistrar{}
	cfg := brokertest.Config()
	cfg.BrokerID = 4
	cfg.EnableZookeeper, cfg.ZkConnect = true, "zk.invalid:2181"
	cfg.Registrar = reg
	cfg.Log.TopicPartitions = map[string]int{"wide": 3}
	b := brokertest.Start(t, cfg)
	if got, want := reg.got(), []string{fmt.Sprintf("broker 4 127.0.0.1:%d", b.Port)}; !slices.Equal(got, want) {
		t.Fatalf("after start: %v, want %v", got, want)
	}
	c := dial(t, b)
	c.produce("wide", 2, messages(1, "w"))
	c.produce("wide", 0, messages(1, "w"))
	c.produce("narrow", 0, messages(1, "n"))
	wait.For(t, "topic registrations", func() bool { return len(reg.got()) == 3 })
	if got := reg.got(); !slices.Equal(got[1:], []string{"topic wide 3", "topic narrow 1"}) {
		t.Fatalf("registrations %v", got)
	}

	reg2 := &fakeRegistrar{}
	b.Config.Registrar = reg2
	b2 := b.Restart(t)
	if got := reg2.got(); !slices.Equal(got, []string{fmt.Sprintf("broker 4 127.0.0.1:%d", b2.Port), "topic narrow 1", "topic wide 3"}) {
		t.Fatalf("after restart: %v", got)
	}
}

func TestRegistrationFailureStopsRun(t *testing.T) {
	cfg := brokertest.Config()
	cfg.Log.Dir = t.TempDir()
	cfg.Hostname, cfg.Port = "127.0.0.1", 0
	cfg.EnableZookeeper, cfg.ZkConnect = true, "zk.invalid:2181"
	cfg.Registrar = &fakeRegistrar{failOn: "broker"}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "registry down") {
		t.Fatalf("Run = %v", err)
	}
	if err := b.Run(context.Background()); err == nil {
		t.Fatal("second Run accepted")
	}
}

func TestNewRefusesBadConfigAndBusyPort(t *testing.T) {
	cfg := brokertest.Config()
	cfg.Log.Dir = t.TempDir()
	cfg.Log.NumPartitions = 0
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := broker.New(cfg); !errors.Is(err, broker.ErrInvalidConfig) || !strings.Contains(err.Error(), "num.partitions") {
		t.Fatalf("New = %v", err)
	}
	b := brokertest.Start(t, brokertest.Config())
	cfg = brokertest.Config()
	cfg.Log.Dir = t.TempDir()
	cfg.Hostname, cfg.Port = b.Host, b.Port
	if _, err := broker.New(cfg); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("New on a busy port = %v", err)
	}
}
