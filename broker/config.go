package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"runtime"
	"time"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

// ErrInvalidConfig is wrapped by every configuration error; the message
// names the key and the value that was refused.
var ErrInvalidConfig = errors.New("broker: invalid configuration")

// Registrar publishes the broker and its topics in a registry (ZooKeeper in
// Kafka 0.7: /brokers/ids/<id> and /brokers/topics/<topic>/<id>). Package
// zkcoord provides one; the broker only calls it.
//
// Paper §3.2: brokers register themselves and the topics they
// hold so that producers and consumers can find partitions.
type Registrar interface {
	// Register announces the broker as reachable at host:port.
	Register(brokerID wire.BrokerID, host string, port int) error
	// RegisterTopic announces that the broker holds partitions of topic.
	RegisterTopic(topic string, partitions int) error
}

// Config is the broker's configuration: Kafka 0.7's server.properties, one
// field per key (the key is named in each field's comment), plus the parts a
// program injects (Registrar, Clock, Logger). Start from DefaultConfig; the
// keys can be set from a properties file and flags (see LoadConfig and Set).
//
// Durations are typed: a key in hours, minutes or milliseconds sets the
// corresponding time.Duration, and a program (a test) may set any positive
// duration directly.
type Config struct {
	// BrokerID identifies the broker in the cluster (brokerid).
	BrokerID wire.BrokerID
	// Hostname is the address the broker listens on and registers
	// (hostname). Empty: listen on every interface and register this
	// machine's IP address, as Kafka 0.7
	// (InetAddress.getLocalHost.getHostAddress).
	//
	// Deviation: Kafka 0.7 always listens on every interface and uses
	// hostname only for registration; listening on it lets several brokers
	// and tests share one machine on loopback.
	Hostname string
	// Port is the TCP port (port); 0 picks a free port (see Broker.Addr).
	Port int
	// LogDir holds one directory per topic partition (log.dir).
	LogDir string
	// NumPartitions is the partition count of a new topic (num.partitions).
	NumPartitions int
	// TopicPartitions overrides NumPartitions per topic
	// (topic.partition.count.map, "topic1:8,topic2:16").
	TopicPartitions map[string]int
	// LogFileSize is the size at which a segment file is rolled
	// (log.file.size, bytes).
	LogFileSize int64
	// LogRollInterval is the age at which a segment is rolled (log.roll.hours).
	LogRollInterval time.Duration
	// FlushInterval is the number of messages appended to a partition
	// before it is flushed (log.flush.interval).
	FlushInterval int
	// FlushIntervalTime is the longest time a message stays unflushed
	// (log.default.flush.interval.ms; when only
	// log.default.flush.scheduler.interval.ms is given, it follows it, as in
	// Kafka 0.7).
	FlushIntervalTime time.Duration
	// FlushSchedulerInterval is how often the flusher looks for partitions
	// to flush (log.default.flush.scheduler.interval.ms).
	FlushSchedulerInterval time.Duration
	// TopicFlushIntervals overrides FlushIntervalTime per topic
	// (topic.flush.intervals.ms, "topic1:1000,topic2:2000").
	TopicFlushIntervals map[string]time.Duration
	// RetentionTime is the age after which a segment is deleted
	// (log.retention.hours).
	RetentionTime time.Duration
	// TopicRetentionTimes overrides RetentionTime per topic
	// (topic.log.retention.hours, "topic1:24,topic2:48").
	TopicRetentionTimes map[string]time.Duration
	// RetentionSize bounds each partition's size; -1 is unlimited
	// (log.retention.size, bytes).
	RetentionSize int64
	// CleanupInterval is how often retention runs (log.cleanup.interval.mins).
	CleanupInterval time.Duration
	// MaxRequestSize bounds a request frame; larger frames are refused
	// before anything is allocated (max.socket.request.bytes).
	MaxRequestSize int32
	// MaxMessageSize bounds one message (max.message.size).
	MaxMessageSize int
	// SocketSendBuffer is SO_SNDBUF of accepted connections
	// (socket.send.buffer, bytes).
	SocketSendBuffer int
	// SocketReceiveBuffer is SO_RCVBUF of accepted connections
	// (socket.receive.buffer, bytes).
	SocketReceiveBuffer int
	// NumThreads is Kafka 0.7's number of network processor threads
	// (num.threads; default: the number of CPUs).
	//
	// Deviation: accepted and validated but not used. Each connection has
	// its own goroutine and Go's scheduler spreads them over GOMAXPROCS
	// threads; a fixed pool would only let slow clients block others.
	NumThreads int
	// EnableZookeeper turns registration on (enable.zookeeper) when
	// ZkConnect is set. The broker registers through Registrar; with no
	// Registrar it logs a warning and runs without one.
	EnableZookeeper bool
	// ZkConnect is the ZooKeeper connection string (zk.connect). Empty (the
	// default) runs the broker alone, without ZooKeeper.
	ZkConnect string
	// ZkConnectionTimeout bounds connecting to ZooKeeper
	// (zk.connectiontimeout.ms).
	ZkConnectionTimeout time.Duration
	// ZkSessionTimeout is the ZooKeeper session timeout (zk.sessiontimeout.ms).
	ZkSessionTimeout time.Duration
	// ZkSyncTime is how far a ZooKeeper follower may lag (zk.synctime.ms).
	ZkSyncTime time.Duration
	// FetchUseSendfile selects the zero-copy fetch path (fetch.use.sendfile,
	// an extension key, default true). false copies through a user-space
	// buffer; it exists only for the sendfile ablation experiment.
	FetchUseSendfile bool
	// MetricsListen is the HOST:PORT of the broker's HTTP listener
	// (metrics.listen, an extension key; empty, the default: none). It
	// serves Prometheus series at /metrics and the read-only admin
	// endpoint /admin/partitions (broker/metrics).
	MetricsListen string

	// The replication layer's keys (broker/replica; not in 0.7). The 2011
	// broker ignores them; kafka-server hands them to the layer, which it
	// runs whenever the broker uses ZooKeeper.

	// ReplicaLagTime is replica.lag.time.max.ms.
	ReplicaLagTime time.Duration
	// ReplicaTruncation is replica.truncation: epoch (KIP-101) or hw (0.8).
	ReplicaTruncation string
	// MinInsyncReplicas is min.insync.replicas.
	MinInsyncReplicas int
	// UncleanLeaderElection is unclean.leader.election.enable.
	UncleanLeaderElection bool
	// ReplicaFetchMaxBytes is replica.fetch.max.bytes.
	ReplicaFetchMaxBytes int
	// ReplicaFetchWait is replica.fetch.wait.max.ms.
	ReplicaFetchWait time.Duration
	// ReplicaFetchBackoff is replica.fetch.backoff.ms.
	ReplicaFetchBackoff time.Duration
	// ReplicaHWCheckpointInterval is
	// replica.high.watermark.checkpoint.interval.ms.
	ReplicaHWCheckpointInterval time.Duration
	// Layer, if set, builds the layer above the 2011 broker (the
	// replication layer) once the logs are open; the broker serves its
	// requests and runs it beside the schedulers.
	Layer func(logs *log.Manager) (Layer, error)

	// ShutdownTimeout bounds how long a graceful shutdown waits for
	// in-flight responses before closing their connections.
	ShutdownTimeout time.Duration
	// Registrar, if set and UsesZookeeper, registers the broker
	// and its topics.
	Registrar Registrar
	// Clock drives the log's time-based roll and retention (nil: real time).
	Clock log.Clock
	// Logger receives the broker's logs (nil: slog.Default()).
	Logger *slog.Logger
}

// DefaultConfig returns Kafka 0.7's defaults. Where 0.7 has none (brokerid,
// log.dir, zk.connect) it uses the values of 0.7's config/server.properties.
func DefaultConfig() Config {
	return Config{
		BrokerID:               0,
		Port:                   6667,
		LogDir:                 "/tmp/kafka-logs",
		NumPartitions:          1,
		LogFileSize:            1 << 30,
		LogRollInterval:        168 * time.Hour,
		FlushInterval:          500,
		FlushIntervalTime:      3000 * time.Millisecond,
		FlushSchedulerInterval: 3000 * time.Millisecond,
		RetentionTime:          168 * time.Hour,
		RetentionSize:          -1,
		CleanupInterval:        10 * time.Minute,
		MaxRequestSize:         100 * 1024 * 1024,
		MaxMessageSize:         wire.DefaultMaxMessageSize,
		SocketSendBuffer:       100 * 1024,
		SocketReceiveBuffer:    100 * 1024,
		NumThreads:             runtime.NumCPU(),
		EnableZookeeper:        true,
		ZkConnectionTimeout:    6000 * time.Millisecond,
		ZkSessionTimeout:       6000 * time.Millisecond,
		ZkSyncTime:             2000 * time.Millisecond,
		FetchUseSendfile:       true,
		ShutdownTimeout:        10 * time.Second,

		ReplicaLagTime:              10 * time.Second,
		ReplicaTruncation:           "epoch",
		MinInsyncReplicas:           1,
		ReplicaFetchMaxBytes:        1 << 20,
		ReplicaFetchWait:            500 * time.Millisecond,
		ReplicaFetchBackoff:         100 * time.Millisecond,
		ReplicaHWCheckpointInterval: 5 * time.Second,
	}
}

// Validate checks every field and returns one error per bad field, each
// naming its key (joined with errors.Join; each wraps ErrInvalidConfig).
func (c *Config) Validate() error {
	var errs []error
	bad := func(key string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s %s", ErrInvalidConfig, key, fmt.Sprintf(format, args...)))
	}
	positive := func(key string, d time.Duration) {
		if d <= 0 {
			bad(key, "must be positive, got %v", d)
		}
	}
	if c.BrokerID < 0 {
		bad("brokerid", "must be at least 0, got %d", c.BrokerID)
	}
	if c.Port < 0 || c.Port > math.MaxUint16 {
		bad("port", "must be in [0, 65535], got %d", c.Port)
	}
	if c.LogDir == "" {
		bad("log.dir", "must be set")
	}
	if c.NumPartitions < 1 {
		bad("num.partitions", "must be at least 1, got %d", c.NumPartitions)
	}
	for topic, n := range c.TopicPartitions {
		if err := wire.ValidateTopic(topic); err != nil {
			bad("topic.partition.count.map", "names an invalid topic: %v", err)
		}
		if n < 1 {
			bad("topic.partition.count.map", "gives topic %q %d partitions; must be at least 1", topic, n)
		}
	}
	if c.LogFileSize < wire.HeaderLenV0 || c.LogFileSize > math.MaxInt32 {
		bad("log.file.size", "must be in [%d, %d], got %d", wire.HeaderLenV0, math.MaxInt32, c.LogFileSize)
	}
	positive("log.roll.hours", c.LogRollInterval)
	if c.FlushInterval < 1 {
		bad("log.flush.interval", "must be at least 1, got %d", c.FlushInterval)
	}
	positive("log.default.flush.interval.ms", c.FlushIntervalTime)
	positive("log.default.flush.scheduler.interval.ms", c.FlushSchedulerInterval)
	for topic, d := range c.TopicFlushIntervals {
		if err := wire.ValidateTopic(topic); err != nil {
			bad("topic.flush.intervals.ms", "names an invalid topic: %v", err)
		}
		if d <= 0 {
			bad("topic.flush.intervals.ms", "gives topic %q the interval %v; must be positive", topic, d)
		}
	}
	positive("log.retention.hours", c.RetentionTime)
	for topic, d := range c.TopicRetentionTimes {
		if err := wire.ValidateTopic(topic); err != nil {
			bad("topic.log.retention.hours", "names an invalid topic: %v", err)
		}
		if d <= 0 {
			bad("topic.log.retention.hours", "gives topic %q the retention %v; must be positive", topic, d)
		}
	}
	if c.RetentionSize < -1 {
		bad("log.retention.size", "must be -1 (unlimited) or at least 0, got %d", c.RetentionSize)
	}
	positive("log.cleanup.interval.mins", c.CleanupInterval)
	if c.MaxRequestSize < 1 {
		bad("max.socket.request.bytes", "must be at least 1, got %d", c.MaxRequestSize)
	}
	if c.MaxMessageSize < wire.HeaderLenV1 {
		bad("max.message.size", "must be at least %d (a message header), got %d", wire.HeaderLenV1, c.MaxMessageSize)
	}
	if c.SocketSendBuffer < 0 {
		bad("socket.send.buffer", "must not be negative, got %d", c.SocketSendBuffer)
	}
	if c.SocketReceiveBuffer < 0 {
		bad("socket.receive.buffer", "must not be negative, got %d", c.SocketReceiveBuffer)
	}
	if c.NumThreads < 1 {
		bad("num.threads", "must be at least 1, got %d", c.NumThreads)
	}
	positive("zk.connectiontimeout.ms", c.ZkConnectionTimeout)
	positive("zk.sessiontimeout.ms", c.ZkSessionTimeout)
	positive("zk.synctime.ms", c.ZkSyncTime)
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			bad("metrics.listen", "must be HOST:PORT, got %q: %v", c.MetricsListen, err)
		}
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("%w: ShutdownTimeout must be positive, got %v", ErrInvalidConfig, c.ShutdownTimeout))
	}
	return errors.Join(errs...)
}

// logConfig derives the log manager's configuration.
func (c *Config) logConfig(onNewTopic func(topic string, partitions int)) log.Config {
	lc := log.DefaultConfig()
	lc.Dir = c.LogDir
	lc.NumPartitions = c.NumPartitions
	lc.TopicPartitions = c.TopicPartitions
	lc.FileSize = c.LogFileSize
	lc.RollInterval = c.LogRollInterval
	lc.FlushInterval = c.FlushInterval
	lc.FlushIntervalTime = c.FlushIntervalTime
	lc.TopicFlushIntervals = c.TopicFlushIntervals
	lc.FlushSchedulerInterval = c.FlushSchedulerInterval
	lc.RetentionTime = c.RetentionTime
	lc.TopicRetentionTimes = c.TopicRetentionTimes
	lc.RetentionSize = c.RetentionSize
	lc.CleanupInterval = c.CleanupInterval
	lc.MaxMessageSize = c.MaxMessageSize
	lc.OnNewTopic = onNewTopic
	if c.Clock != nil {
		lc.Clock = c.Clock
	}
	lc.Logger = c.Logger
	return lc
}

// UsesZookeeper reports whether the broker registers in ZooKeeper: zk.connect
// is set and enable.zookeeper is true (Paper §3.2).
func (c *Config) UsesZookeeper() bool { return c.EnableZookeeper && c.ZkConnect != "" }
