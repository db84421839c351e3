package log

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/netdb11/kafka/broker/wire"
)

// Manager owns every partition log under log.dir: it opens and recovers
// them, creates new ones on demand, and runs the flush and retention
// schedulers (Run). Its methods are safe for concurrent use.
type Manager struct {
	cfg Config // Clock and Logger filled in; read-only after Open

	mu       sync.RWMutex
	logs     map[string]map[wire.Partition]*Log // topic -> partition -> log; guarded by mu
	creating map[partitionKey]*creation         // partitions being created; guarded by mu
	closed   bool                               // guarded by mu
	lock     *os.File                           // holds the flock on LockFile; closed by Close
	// inflight counts creations under way; Close waits for them. Add is
	// called holding mu while closed is false.
	inflight sync.WaitGroup

	// createHook, if set (by tests, before any use), runs in the middle of
	// a partition's creation, after its directory exists and holding no
	// lock.
	createHook func(topic string, partition wire.Partition)
}

// partitionKey names one partition.
type partitionKey struct {
	topic     string
	partition wire.Partition
}

// creation is a partition being created by one GetOrCreate; others asking
// for the same partition wait on done and share its result.
type creation struct {
	done chan struct{} // closed when l and err are set
	l    *Log
	err  error
}

// Open validates cfg, creates cfg.Dir if needed, and opens and recovers every
// "<topic>-<partition>" directory in it. Entries of another form are left
// alone (with a warning). If any log fails to open, the ones opened so far
// are closed and the error is returned.
func Open(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	m := &Manager{cfg: cfg, logs: make(map[string]map[wire.Partition]*Log), creating: make(map[partitionKey]*creation)}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return nil, fmt.Errorf("%w: log.dir %s: %w", ErrNotWritable, cfg.Dir, err)
		}
		return nil, fmt.Errorf("log: %w", err)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	m.lock = lock
	entries, err := os.ReadDir(cfg.Dir)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("log: %w", err), m.Close())
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if strings.HasSuffix(e.Name(), deletingSuffix) {
			// A Delete that a crash interrupted after its rename.
			if err := os.RemoveAll(filepath.Join(cfg.Dir, e.Name())); err != nil {
				return nil, errors.Join(fmt.Errorf("log: finishing a deletion: %w", err), m.Close())
			}
			continue
		}
		topic, partition, err := parsePartitionDirName(e.Name())
		if err != nil {
			m.cfg.Logger.Warn("ignoring a directory that is not a partition", "dir", filepath.Join(cfg.Dir, e.Name()), "err", err)
			continue
		}
		l, err := openLog(filepath.Join(cfg.Dir, e.Name()), topic, partition, &m.cfg)
		if err != nil {
			return nil, errors.Join(err, m.Close())
		}
		m.addLocked(l)
	}
	m.cfg.Logger.Info("logs opened", "dir", cfg.Dir, "topics", len(m.logs))
	return m, nil
}

// addLocked records l; the caller holds mu or owns m exclusively.
func (m *Manager) addLocked(l *Log) {
	parts := m.logs[l.topic]
	if parts == nil {
		parts = make(map[wire.Partition]*Log)
		m.logs[l.topic] = parts
	}
	parts[l.partition] = l
}

// Get returns the log of an existing partition. An unknown topic or
// partition wraps wire.ErrWrongPartition; after Close, ErrClosed.
func (m *Manager) Get(topic string, partition wire.Partition) (*Log, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, fmt.Errorf("log: %w", ErrClosed)
	}
	if l := m.logs[topic][partition]; l != nil {
		return l, nil
	}
	return nil, fmt.Errorf("log: topic %q partition %d: %w (not on this broker)", topic, partition, wire.ErrWrongPartition)
}

// GetOrCreate returns the log of a partition, creating it (its directory and
// first segment, durably) if it does not exist. The topic name is checked
// first (the error wraps wire.ErrInvalidTopic and nothing touches the disk); a
// partition outside [0, Partitions(topic)) wraps wire.ErrWrongPartition.
// When it creates the first partition of a topic it calls Config.OnNewTopic.
//
// The creation (a mkdir, a segment file and their directory fsyncs) runs
// holding no lock of the Manager, so reads and appends of other partitions
// go on meanwhile; concurrent calls for the same partition wait for the one
// creating it and share its result. The new log is published under the
// lock once it is open.
func (m *Manager) GetOrCreate(topic string, partition wire.Partition) (*Log, error) {
	return m.getOrCreate(topic, partition, false)
}

// getOrCreate is GetOrCreate; assigned skips the partition count check (the
// partition is assigned to this broker by the replication layer).
func (m *Manager) getOrCreate(topic string, partition wire.Partition, assigned bool) (*Log, error) {
	if err := wire.ValidateTopic(topic); err != nil {
		return nil, err
	}
	if l, err := m.Get(topic, partition); err == nil || errors.Is(err, ErrClosed) {
		return l, err
	}
	key := partitionKey{topic, partition}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, fmt.Errorf("log: %w", ErrClosed)
	}
	if l := m.logs[topic][partition]; l != nil {
		m.mu.Unlock()
		return l, nil
	}
	if c := m.creating[key]; c != nil {
		m.mu.Unlock()
		<-c.done
		return c.l, c.err
	}
	n := m.partitionsLocked(topic)
	if partition < 0 || (!assigned && int(partition) >= n) {
		m.mu.Unlock()
		return nil, fmt.Errorf("log: topic %q partition %d: %w (the topic has partitions 0 to %d)", topic, partition, wire.ErrWrongPartition, n-1)
	}
	c := &creation{done: make(chan struct{})}
	m.creating[key] = c
	m.inflight.Add(1)
	m.mu.Unlock()

	l, err := m.create(topic, partition)

	m.mu.Lock()
	delete(m.creating, key)
	newTopic := false
	switch {
	case err != nil:
	case m.closed:
		// Close did not see this log; close it here (Close waits).
		err = errors.Join(fmt.Errorf("log: %w", ErrClosed), l.close())
		l = nil
	default:
		newTopic = len(m.logs[topic]) == 0
		n = m.partitionsLocked(topic)
		m.addLocked(l)
	}
	m.mu.Unlock()
	c.l, c.err = l, err
	close(c.done)
	m.inflight.Done()
	if err != nil {
		return nil, err
	}
	m.cfg.Logger.Info("created partition", "topic", topic, "partition", partition)
	if newTopic && m.cfg.OnNewTopic != nil {
		m.cfg.OnNewTopic(topic, n)
	}
	return l, nil
}

// create makes the partition directory durable and opens the log in it. It
// holds no lock: GetOrCreate makes sure one goroutine at a time creates a
// given partition.
func (m *Manager) create(topic string, partition wire.Partition) (*Log, error) {
	dir := filepath.Join(m.cfg.Dir, partitionDirName(topic, partition))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("log: create partition: %w", err)
	}
	if err := syncDir(m.cfg.Dir); err != nil {
		return nil, err
	}
	if m.createHook != nil {
		m.createHook(topic, partition)
	}
	return openLog(dir, topic, partition, &m.cfg)
}

// MaxMessageSize returns the largest size field a message may have
// (max.message.size): what Log.Append checks, and what a caller of
// Log.AppendValidated must have checked.
func (m *Manager) MaxMessageSize() int { return m.cfg.MaxMessageSize }

// Partitions returns the partition count of topic: its topic.partition.count.map
// entry or num.partitions, or more if more partitions of it are on disk.
func (m *Manager) Partitions(topic string) int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.partitionsLocked(topic)
}

func (m *Manager) partitionsLocked(topic string) int {
	n := m.cfg.partitionsOf(topic)
	for p := range m.logs[topic] {
		n = max(n, int(p)+1)
	}
	return n
}

// Topics returns the topics this manager holds, each with its partition
// count (as Partitions).
func (m *Manager) Topics() map[string]int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]int, len(m.logs))
	for topic := range m.logs {
		out[topic] = m.partitionsLocked(topic)
	}
	return out
}

// allLogs returns every log, or nil after Close.
func (m *Manager) allLogs() []*Log {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil
	}
	var out []*Log
	for _, parts := range m.logs {
		for _, l := range parts {
			out = append(out, l)
		}
	}
	return out
}

// FlushAll flushes every log and returns their errors, joined.
func (m *Manager) FlushAll() error {
	var errs []error
	for _, l := range m.allLogs() {
		if err := l.Flush(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close flushes and closes every log and writes each one's clean-shutdown
// marker (not for a log whose write failed, so that it is recovered at the
// next open). Files that Regions still hold close when those are released.
// Later calls return nil; other methods return ErrClosed.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	logs := m.logs
	m.mu.Unlock()
	// A creation under way closes its own log when it sees closed.
	m.inflight.Wait()
	var errs []error
	for _, parts := range logs {
		for _, l := range parts {
			if err := l.close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// Closing the file releases the flock; the file stays, as later Kafka
	// versions leave theirs.
	if err := m.lock.Close(); err != nil {
		errs = append(errs, fmt.Errorf("log: release %s: %w", LockFile, err))
	}
	return errors.Join(errs...)
}
