package log

import (
	"math"
	"time"

	"github.com/netdb11/kafka/broker/props"
	"github.com/netdb11/kafka/broker/wire"
)

// Keys binds the log's server.properties keys to Config's fields, with
// their bounds: Config.Validate checks them, and the broker's own table
// takes them in (broker.Config.Log).
var Keys = props.NewTable("log",
	props.String("log.dir", func(c *Config) *string { return &c.Dir }, func(c *Config) error {
		if c.Dir == "" {
			return props.Invalid("log.dir", `""`, "must not be empty")
		}
		return nil
	}).Doc("string", "directory holding one subdirectory <topic>-<partition> per partition"),
	props.Int("num.partitions", 1, math.MaxInt32, "", func(c *Config) *int { return &c.NumPartitions }).
		Doc("int", "number of partitions of a topic created on first produce"),
	props.TopicCounts("topic.partition.count.map", 1, func(c *Config) *map[string]int { return &c.TopicPartitions }).
		Doc("map", "partition counts of given topics, overriding num.partitions (topic1:8,topic2:16)"),
	props.Int("log.file.size", wire.HeaderLenV0, math.MaxInt32, "", func(c *Config) *int64 { return &c.FileSize }).
		Doc("bytes", "size at which a log segment file is closed and a new one started"),
	props.Duration("log.roll.hours", time.Hour, 1, math.MaxInt32, "", func(c *Config) *time.Duration { return &c.RollInterval }).
		Doc("hours", "age at which a log segment is closed and a new one started"),
	props.Int("log.flush.interval", 1, math.MaxInt32, "", func(c *Config) *int { return &c.FlushInterval }).
		Doc("int", "number of messages appended to a partition before it is flushed to disk"),
	props.Millis("log.default.flush.interval.ms", 1, math.MaxInt32, "", func(c *Config) *time.Duration { return &c.FlushIntervalTime }).
		Doc("ms", "longest time a message stays unflushed; when not given, follows log.default.flush.scheduler.interval.ms"),
	props.Millis("log.default.flush.scheduler.interval.ms", 1, math.MaxInt32, "", func(c *Config) *time.Duration { return &c.FlushSchedulerInterval }).
		Doc("ms", "how often the flusher checks which partitions to flush"),
	props.TopicDurations("topic.flush.intervals.ms", time.Millisecond, func(c *Config) *map[string]time.Duration { return &c.TopicFlushIntervals }).
		Doc("map", "flush intervals of given topics in ms, overriding log.default.flush.interval.ms (topic1:1000,topic2:2000)"),
	props.Duration("log.retention.hours", time.Hour, 1, math.MaxInt32, "", func(c *Config) *time.Duration { return &c.RetentionTime }).
		Doc("hours", "age after which a log segment is deleted"),
	props.TopicDurations("topic.log.retention.hours", time.Hour, func(c *Config) *map[string]time.Duration { return &c.TopicRetentionTimes }).
		Doc("map", "retention of given topics in hours, overriding log.retention.hours (topic1:24,topic2:48)"),
	props.Int("log.retention.size", -1, math.MaxInt64, "-1: no limit", func(c *Config) *int64 { return &c.RetentionSize }).
		Doc("bytes", "size above which a partition's oldest segments are deleted (-1: no limit)"),
	props.Duration("log.cleanup.interval.mins", time.Minute, 1, math.MaxInt32, "", func(c *Config) *time.Duration { return &c.CleanupInterval }).
		Doc("mins", "how often segments are checked for deletion"),
	props.Int("max.message.size", wire.HeaderLenV1, math.MaxInt32, "", func(c *Config) *int { return &c.MaxMessageSize }).
		Doc("bytes", "largest message accepted in a produce request (its size field)"),
)
