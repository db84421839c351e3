package log

import (
	"log/slog"
	"time"

	"github.com/netdb11/kafka/broker/props"
	"github.com/netdb11/kafka/broker/wire"
)

// Clock tells the time. The log reads the time only through its Config's
// Clock, so tests can drive time-based roll, flush and retention without
// sleeping (as Kafka 0.7's MockTime).
//
// A Clock that also implements Ticker drives Manager.Run's schedulers too;
// otherwise Run uses real tickers.
type Clock interface {
	Now() time.Time
}

// Ticker is an optional interface of a Clock: NewTicker returns a channel
// that receives a value every d, and a function that stops it.
type Ticker interface {
	NewTicker(d time.Duration) (c <-chan time.Time, stop func())
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Config configures a Manager and its logs. The comment of each field names
// its Kafka 0.7 server.properties key. Start from DefaultConfig.
type Config struct {
	// Dir is the directory holding every partition directory (log.dir).
	Dir string
	// NumPartitions is the partition count of a topic without an override
	// (num.partitions).
	NumPartitions int
	// TopicPartitions overrides the partition count per topic
	// (topic.partition.count.map).
	TopicPartitions map[string]int
	// FileSize is the size a segment may reach before the log rolls to a
	// new one (log.file.size).
	FileSize int64
	// RollInterval is the age at which the active segment is rolled even if
	// it is not full (log.roll.hours). As in Kafka 0.7 the age counts from
	// the segment's first append since the log was opened.
	RollInterval time.Duration
	// FlushInterval is the number of messages appended after which the log
	// is flushed (log.flush.interval).
	FlushInterval int
	// FlushIntervalTime is the longest time an appended message waits for a
	// flush (log.default.flush.interval.ms), checked every
	// FlushSchedulerInterval.
	FlushIntervalTime time.Duration
	// TopicFlushIntervals overrides FlushIntervalTime per topic
	// (topic.flush.intervals.ms).
	TopicFlushIntervals map[string]time.Duration
	// FlushSchedulerInterval is how often Run checks the time-based flush
	// (log.default.flush.scheduler.interval.ms).
	FlushSchedulerInterval time.Duration
	// RetentionTime is the age (by modification time) after which a segment
	// is deleted (log.retention.hours).
	RetentionTime time.Duration
	// TopicRetentionTimes overrides RetentionTime per topic
	// (topic.log.retention.hours).
	TopicRetentionTimes map[string]time.Duration
	// RetentionSize, when not -1, is the size in bytes above which a log
	// deletes its oldest segments (log.retention.size).
	RetentionSize int64
	// CleanupInterval is how often Run applies retention
	// (log.cleanup.interval.mins).
	CleanupInterval time.Duration
	// MaxMessageSize is the largest size field a message may have
	// (max.message.size); larger messages are refused by Append. Recovery
	// does not apply it: a message stored under a larger limit stays.
	MaxMessageSize int
	// OnNewTopic, if set, is called once when a topic's first partition is
	// created on this broker (for the ZooKeeper registration). It is called
	// from GetOrCreate, after the partition exists, holding no lock of the
	// Manager; it is not called for topics found on disk by Open.
	OnNewTopic func(topic string, partitions int)
	// Observer, if set, is told of every flush (for metrics).
	Observer Observer
	// Clock tells the time; nil means SystemClock.
	Clock Clock
	// Logger receives the log's messages; nil discards them.
	Logger *slog.Logger
}

// Defaults of Kafka 0.7.
const (
	DefaultNumPartitions          = 1
	DefaultFileSize               = 1 << 30
	DefaultRollInterval           = 168 * time.Hour
	DefaultFlushInterval          = 500
	DefaultFlushIntervalTime      = 3000 * time.Millisecond
	DefaultFlushSchedulerInterval = 3000 * time.Millisecond
	DefaultRetentionTime          = 168 * time.Hour
	DefaultRetentionSize          = -1
	DefaultCleanupInterval        = 10 * time.Minute
)

// DefaultConfig returns Kafka 0.7's defaults, with Dir empty.
func DefaultConfig() Config {
	return Config{
		NumPartitions:          DefaultNumPartitions,
		FileSize:               DefaultFileSize,
		RollInterval:           DefaultRollInterval,
		FlushInterval:          DefaultFlushInterval,
		FlushIntervalTime:      DefaultFlushIntervalTime,
		FlushSchedulerInterval: DefaultFlushSchedulerInterval,
		RetentionTime:          DefaultRetentionTime,
		RetentionSize:          DefaultRetentionSize,
		CleanupInterval:        DefaultCleanupInterval,
		MaxMessageSize:         wire.DefaultMaxMessageSize,
	}
}

// Validate checks every field against its key's bounds (see Keys) and
// returns one message per bad key (joined), naming the key and wrapping
// props.ErrInvalid, or nil.
func (c *Config) Validate() error { return props.Each("log", Keys.Validate(c)) }

// partitionsOf returns the configured partition count of topic.
func (c *Config) partitionsOf(topic string) int {
	if n, ok := c.TopicPartitions[topic]; ok {
		return n
	}
	return c.NumPartitions
}

// flushIntervalOf returns the time-based flush interval of topic.
func (c *Config) flushIntervalOf(topic string) time.Duration {
	if d, ok := c.TopicFlushIntervals[topic]; ok {
		return d
	}
	return c.FlushIntervalTime
}

// retentionOf returns the retention time of topic.
func (c *Config) retentionOf(topic string) time.Duration {
	if d, ok := c.TopicRetentionTimes[topic]; ok {
		return d
	}
	return c.RetentionTime
}
