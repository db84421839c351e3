package log

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

func TestParsePartitionDirName(t *testing.T) {
	tests := []struct {
		name      string
		topic     string
		partition wire.Partition
		ok        bool
	}{
		{"t-0", "t", 0, true},
		{"my-topic-12", "my-topic", 12, true},
		{"t", "", 0, false},
		{"t-", "", 0, false},
		{"t-01", "", 0, false},
		{"t--1", "t-", 1, true},
		{"t-+1", "", 0, false},
		{"-1", "", 0, false},
		{"t-99999999999", "", 0, false},
		{"lost+found", "", 0, false},
	}
	for _, tt := range tests {
		topic, p, err := parsePartitionDirName(tt.name)
		if (err == nil) != tt.ok || topic != tt.topic || p != tt.partition {
			t.Errorf("parsePartitionDirName(%q) = %q, %d, %v; want %q, %d, ok=%v", tt.name, topic, p, err, tt.topic, tt.partition, tt.ok)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig()
	good.Dir = "/x"
	if err := good.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	tests := []struct {
		key    string
		modify func(*Config)
	}{
		{"log.dir", func(c *Config) { c.Dir = "" }},
		{"num.partitions", func(c *Config) { c.NumPartitions = 0 }},
		{"topic.partition.count.map", func(c *Config) { c.TopicPartitions = map[string]int{"t": 0} }},
		{"topic.partition.count.map", func(c *Config) { c.TopicPartitions = map[string]int{"a/b": 1} }},
		{"log.file.size", func(c *Config) { c.FileSize = 0 }},
		{"log.roll.hours", func(c *Config) { c.RollInterval = 0 }},
		{"log.flush.interval", func(c *Config) { c.FlushInterval = 0 }},
		{"log.default.flush.interval.ms", func(c *Config) { c.FlushIntervalTime = -1 }},
		{"topic.flush.intervals.ms", func(c *Config) { c.TopicFlushIntervals = map[string]time.Duration{"t": 0} }},
		{"log.default.flush.scheduler.interval.ms", func(c *Config) { c.FlushSchedulerInterval = 0 }},
		{"log.retention.hours", func(c *Config) { c.RetentionTime = 0 }},
		{"topic.log.retention.hours", func(c *Config) { c.TopicRetentionTimes = map[string]time.Duration{"..": time.Hour} }},
		{"log.retention.size", func(c *Config) { c.RetentionSize = -2 }},
		{"log.cleanup.interval.mins", func(c *Config) { c.CleanupInterval = 0 }},
		{"max.message.size", func(c *Config) { c.MaxMessageSize = 5 }},
	}
	for _, tt := range tests {
		c := good
		tt.modify(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.key) {
			t.Errorf("%s: Validate() = %v, want a message naming it", tt.key, err)
		}
	}
	// One message per bad field.
	c := good
	c.FileSize, c.FlushInterval = 0, 0
	if err := c.Validate(); err == nil || strings.Count(err.Error(), "\n") != 1 {
		t.Errorf("two bad fields: %v, want two lines", err)
	}
}

func TestManagerCreatesPartitionsOnDemand(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.NumPartitions = 2
	cfg.TopicPartitions = map[string]int{"wide": 4}
	var mu sync.Mutex
	created := map[string]int{}
	calls := 0
	cfg.OnNewTopic = func(topic string, partitions int) {
		mu.Lock()
		defer mu.Unlock()
		created[topic] = partitions
		calls++
	}
	m := openManager(t, cfg)

	for _, p := range []wire.Partition{0, 1, 1, 0} {
		getLog(t, m, "narrow", p)
	}
	getLog(t, m, "wide", 3)
	if calls != 2 || created["narrow"] != 2 || created["wide"] != 4 {
		t.Fatalf("OnNewTopic calls %d: %v; want once per topic with its partition count", calls, created)
	}
	if got, want := m.Topics(), map[string]int{"narrow": 2, "wide": 4}; !maps.Equal(got, want) {
		t.Fatalf("Topics() = %v, want %v", got, want)
	}
	for _, dir := range []string{"narrow-0", "narrow-1", "wide-3"} {
		if _, err := os.Stat(filepath.Join(cfg.Dir, dir, wire.SegmentName(0))); err != nil {
			t.Fatalf("partition %s: %v", dir, err)
		}
	}

	_, err := m.GetOrCreate("narrow", 2)
	wantErrIs(t, err, wire.ErrWrongPartition)
	_, err = m.GetOrCreate("narrow", -1)
	wantErrIs(t, err, wire.ErrWrongPartition)
	_, err = m.Get("wide", 0)
	wantErrIs(t, err, wire.ErrWrongPartition)
	_, err = m.Get("nothing", 0)
	wantErrIs(t, err, wire.ErrWrongPartition)
	if l, err := m.Get("wide", 3); err != nil || l.Topic() != "wide" || l.Partition() != 3 {
		t.Fatalf("Get(wide, 3) = %v, %v", l, err)
	}
}

func TestManagerRefusesBadTopicsWithoutTouchingTheDisk(t *testing.T) {
	cfg, _ := testConfig(t)
	outside := filepath.Join(filepath.Dir(cfg.Dir), "escaped-0")
	m := openManager(t, cfg)
	for _, topic := range []string{"../escaped", "a/b", "", ".", "..", "x\x00", strings.Repeat("y", 300)} {
		_, err := m.GetOrCreate(topic, 0)
		wantErrIs(t, err, wire.ErrInvalidTopic)
	}
	entries, err := os.ReadDir(cfg.Dir)
	entries = slices.DeleteFunc(entries, func(e os.DirEntry) bool { return e.Name() == LockFile })
	if err != nil || len(entries) != 0 {
		t.Fatalf("log.dir holds %v (%v), want nothing", entries, err)
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Fatalf("a directory escaped log.dir: %v", err)
	}
}

func TestManagerReopensWhatItHeld(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.FileSize = 200
	m, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for _, tp := range []struct {
		topic string
		p     wire.Partition
	}{{"a", 0}, {"b-c", 0}} {
		l := getLog(t, m, tp.topic, tp.p)
		for i := range 10 {
			mustAppend(t, l, messageSet(uint64(i), 2, 30))
		}
		want[l.String()] = readAll(t, l)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for name := range want {
		if _, err := os.Stat(filepath.Join(cfg.Dir, name, CleanShutdownFile)); err != nil {
			t.Fatalf("%s: no clean-shutdown marker after Close: %v", name, err)
		}
	}
	// Junk in log.dir is left alone.
	if err := os.Mkdir(filepath.Join(cfg.Dir, "lost+found"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, "README"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}

	var newTopics int
	cfg.OnNewTopic = func(string, int) { newTopics++ }
	m2 := openManager(t, cfg)
	if got := m2.Topics(); len(got) != 2 || got["a"] != 1 || got["b-c"] != 1 {
		t.Fatalf("Topics after reopen: %v", got)
	}
	for name, w := range want {
		topic, p, _ := parsePartitionDirName(name)
		l, err := m2.Get(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(cfg.Dir, name, CleanShutdownFile)); !os.IsNotExist(err) {
			t.Fatalf("%s: marker still there after open: %v", name, err)
		}
		if got := readAll(t, l); !bytes.Equal(got, w) {
			t.Fatalf("%s: bytes differ after reopen", name)
		}
		off := mustAppend(t, l, messageSet(99, 1, 30))
		if off != wire.Offset(len(w)) {
			t.Fatalf("%s: append after reopen at %d, want %d", name, off, len(w))
		}
	}
	if newTopics != 0 {
		t.Fatalf("OnNewTopic called %d times for topics found on disk", newTopics)
	}
}

func TestFlushDueHonoursTopicIntervals(t *testing.T) {
	cfg, clock := testConfig(t)
	cfg.FlushInterval = 1000
	cfg.FlushIntervalTime = 3 * time.Second
	cfg.TopicFlushIntervals = map[string]time.Duration{"fast": time.Second}
	m := openManager(t, cfg)
	slow, fast := getLog(t, m, "slow", 0), getLog(t, m, "fast", 0)
	set := messageSet(0, 1, 10)
	appendOnly(t, slow, set)
	appendOnly(t, fast, set)

	clock.Advance(999 * time.Millisecond)
	if err := m.FlushDue(); err != nil {
		t.Fatal(err)
	}
	if slow.EndOffset() != 0 || fast.EndOffset() != 0 {
		t.Fatal("flushed before any interval passed")
	}
	clock.Advance(time.Millisecond)
	if err := m.FlushDue(); err != nil {
		t.Fatal(err)
	}
	if slow.EndOffset() != 0 || fast.EndOffset() != wire.Offset(len(set)) {
		t.Fatalf("after 1s: slow %d, fast %d; want only fast flushed", slow.EndOffset(), fast.EndOffset())
	}
	clock.Advance(2 * time.Second)
	if err := m.FlushDue(); err != nil {
		t.Fatal(err)
	}
	if slow.EndOffset() != wire.Offset(len(set)) {
		t.Fatalf("after 3s: slow %d, want flushed", slow.EndOffset())
	}
	// A log that was idle longer than its interval flushes at the first
	// tick after its next append (its last flush is long ago).
	clock.Advance(time.Hour)
	appendOnly(t, fast, set)
	if err := m.FlushDue(); err != nil {
		t.Fatal(err)
	}
	if fast.EndOffset() != wire.Offset(2*len(set)) {
		t.Fatalf("fast %d, want flushed", fast.EndOffset())
	}
}

func TestRunDrivesFlushAndRetention(t *testing.T) {
	cfg, clock := testConfig(t)
	cfg.FlushInterval = 1000
	cfg.FileSize = 30
	m := openManager(t, cfg)
	l := getLog(t, m, "t", 0)
	set := messageSet(0, 1, 20) // 29 bytes: one per segment
	for range 3 {
		appendOnly(t, l, set)
	}
	// Each roll flushed the segment it closed; the last set is unflushed.
	if got, want := l.EndOffset(), wire.Offset(2*len(set)); got != want {
		t.Fatalf("EndOffset %d before the tick, want %d", got, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	// Wait for Run to make its two tickers.
	for range 2 {
		select {
		case <-clock.made:
		case err := <-done:
			t.Fatalf("Run returned early: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("Run made no tickers")
		}
	}
	// A send returns when Run has received the tick; a second one when
	// Run has handled the first.
	flush := clock.ticker(t, cfg.FlushSchedulerInterval)
	flushTick := func() { flush <- clock.Now() }
	now := clock.Advance(cfg.FlushIntervalTime)
	flushTick()
	flushTick()
	if got, want := l.EndOffset(), wire.Offset(3*len(set)); got != want {
		t.Fatalf("EndOffset %d after a flush tick, want %d", got, want)
	}
	clock.Advance(cfg.RetentionTime + time.Hour)
	clean := clock.ticker(t, cfg.CleanupInterval)
	clean <- now
	clean <- now
	if got := segmentFiles(t, l.dir); !slices.Equal(got, []string{wire.SegmentName(3 * 29)}) {
		t.Fatalf("segments after a retention tick: %v", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestGetOrCreateIsSafeConcurrently(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.NumPartitions = 4
	var calls sync.Map
	var count int32
	var mu sync.Mutex
	cfg.OnNewTopic = func(topic string, _ int) {
		mu.Lock()
		count++
		mu.Unlock()
		calls.Store(topic, true)
	}
	m := openManager(t, cfg)
	var wg sync.WaitGroup
	logs := make([]*Log, 16)
	for i := range logs {
		wg.Go(func() {
			l, err := m.GetOrCreate("t", wire.Partition(i%4))
			if err != nil {
				t.Error(err)
				return
			}
			logs[i] = l
		})
	}
	wg.Wait()
	for i := range logs {
		if logs[i] != logs[i%4] {
			t.Fatalf("two logs for partition %d", i%4)
		}
	}
	if count != 1 {
		t.Fatalf("OnNewTopic called %d times", count)
	}
}

// Open takes an exclusive lock on log.dir: a second Manager on the same
// directory is refused, naming the holder, until the first is closed.
func TestOpenLocksLogDir(t *testing.T) {
	cfg, _ := testConfig(t)
	m, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(cfg)
	wantErrIs(t, err, ErrLocked)
	if !strings.Contains(err.Error(), fmt.Sprintf("pid=%d", os.Getpid())) {
		t.Fatalf("error %q does not name the holder", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open after the holder closed: %v", err)
	}
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
}
