package broker

import (
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// key is one server.properties key: its name, the kind of value it takes,
// its help text, and how it reads and shows its Config field.
type key struct {
	name string
	kind string // shown in --help: int, bytes, ms, hours, mins, bool, string, map
	help string
	set  func(c *Config, v string) error
	get  func(c *Config) string
}

// keys lists every key, in the order --help shows them.
var keys = []key{
	{"brokerid", "int", "unique id of this broker in the cluster",
		intSetter("brokerid", 0, math.MaxInt32, func(c *Config, n int64) { c.BrokerID = wire.BrokerID(n) }),
		func(c *Config) string { return strconv.Itoa(int(c.BrokerID)) }},
	{"hostname", "string", "address to listen on and to register in ZooKeeper (empty: every interface, and this host's IP address)",
		func(c *Config, v string) error { c.Hostname = v; return nil },
		func(c *Config) string { return c.Hostname }},
	{"port", "int", "TCP port to listen on (0: any free port)",
		intSetter("port", 0, math.MaxUint16, func(c *Config, n int64) { c.Port = int(n) }),
		func(c *Config) string { return strconv.Itoa(c.Port) }},
	{"log.dir", "string", "directory holding one subdirectory <topic>-<partition> per partition",
		func(c *Config, v string) error {
			if v == "" {
				return invalid("log.dir", v, "must not be empty")
			}
			c.LogDir = v
			return nil
		},
		func(c *Config) string { return c.LogDir }},
	{"num.partitions", "int", "number of partitions of a topic created on first produce",
		intSetter("num.partitions", 1, math.MaxInt32, func(c *Config, n int64) { c.NumPartitions = int(n) }),
		func(c *Config) string { return strconv.Itoa(c.NumPartitions) }},
	{"topic.partition.count.map", "map", "partition counts of given topics, overriding num.partitions (topic1:8,topic2:16)",
		func(c *Config, v string) error {
			m, err := parseTopicMap("topic.partition.count.map", v, 1)
			if err != nil {
				return err
			}
			c.TopicPartitions = make(map[string]int, len(m))
			for t, n := range m {
				c.TopicPartitions[t] = int(n)
			}
			return nil
		},
		func(c *Config) string {
			return formatTopicMap(c.TopicPartitions, func(n int) string { return strconv.Itoa(n) })
		}},
	{"log.file.size", "bytes", "size at which a log segment file is closed and a new one started",
		intSetter("log.file.size", wire.HeaderLenV0, math.MaxInt32, func(c *Config, n int64) { c.LogFileSize = n }),
		func(c *Config) string { return strconv.FormatInt(c.LogFileSize, 10) }},
	{"log.roll.hours", "hours", "age at which a log segment is closed and a new one started",
		durationSetter("log.roll.hours", time.Hour, 1, func(c *Config) *time.Duration { return &c.LogRollInterval }),
		func(c *Config) string { return formatDuration(c.LogRollInterval, time.Hour) }},
	{"log.flush.interval", "int", "number of messages appended to a partition before it is flushed to disk",
		intSetter("log.flush.interval", 1, math.MaxInt32, func(c *Config, n int64) { c.FlushInterval = int(n) }),
		func(c *Config) string { return strconv.Itoa(c.FlushInterval) }},
	{"log.default.flush.interval.ms", "ms", "longest time a message stays unflushed; when not given, follows log.default.flush.scheduler.interval.ms",
		durationSetter("log.default.flush.interval.ms", time.Millisecond, 1, func(c *Config) *time.Duration { return &c.FlushIntervalTime }),
		func(c *Config) string { return formatDuration(c.FlushIntervalTime, time.Millisecond) }},
	{"log.default.flush.scheduler.interval.ms", "ms", "how often the flusher checks which partitions to flush",
		durationSetter("log.default.flush.scheduler.interval.ms", time.Millisecond, 1, func(c *Config) *time.Duration { return &c.FlushSchedulerInterval }),
		func(c *Config) string { return formatDuration(c.FlushSchedulerInterval, time.Millisecond) }},
	{"topic.flush.intervals.ms", "map", "flush intervals of given topics in ms, overriding log.default.flush.interval.ms (topic1:1000,topic2:2000)",
		func(c *Config, v string) error {
			m, err := parseTopicMap("topic.flush.intervals.ms", v, 1)
			if err != nil {
				return err
			}
			c.TopicFlushIntervals = make(map[string]time.Duration, len(m))
			for t, n := range m {
				c.TopicFlushIntervals[t] = time.Duration(n) * time.Millisecond
			}
			return nil
		},
		func(c *Config) string {
			return formatTopicMap(c.TopicFlushIntervals, func(d time.Duration) string { return formatDuration(d, time.Millisecond) })
		}},
	{"log.retention.hours", "hours", "age after which a log segment is deleted",
		durationSetter("log.retention.hours", time.Hour, 1, func(c *Config) *time.Duration { return &c.RetentionTime }),
		func(c *Config) string { return formatDuration(c.RetentionTime, time.Hour) }},
	{"topic.log.retention.hours", "map", "retention of given topics in hours, overriding log.retention.hours (topic1:24,topic2:48)",
		func(c *Config, v string) error {
			m, err := parseTopicMap("topic.log.retention.hours", v, 1)
			if err != nil {
				return err
			}
			c.TopicRetentionTimes = make(map[string]time.Duration, len(m))
			for t, n := range m {
				c.TopicRetentionTimes[t] = time.Duration(n) * time.Hour
			}
			return nil
		},
		func(c *Config) string {
			return formatTopicMap(c.TopicRetentionTimes, func(d time.Duration) string { return formatDuration(d, time.Hour) })
		}},
	{"log.retention.size", "bytes", "size above which a partition's oldest segments are deleted (-1: no limit)",
		intSetter("log.retention.size", -1, math.MaxInt64, func(c *Config, n int64) { c.RetentionSize = n }),
		func(c *Config) string { return strconv.FormatInt(c.RetentionSize, 10) }},
	{"log.cleanup.interval.mins", "mins", "how often segments are checked for deletion",
		durationSetter("log.cleanup.interval.mins", time.Minute, 1, func(c *Config) *time.Duration { return &c.CleanupInterval }),
		func(c *Config) string { return formatDuration(c.CleanupInterval, time.Minute) }},
	{"max.socket.request.bytes", "bytes", "largest request frame accepted; a larger size prefix closes the connection",
		intSetter("max.socket.request.bytes", 1, math.MaxInt32, func(c *Config, n int64) { c.MaxRequestSize = int32(n) }),
		func(c *Config) string { return strconv.Itoa(int(c.MaxRequestSize)) }},
	{"max.message.size", "bytes", "largest message accepted in a produce request",
		intSetter("max.message.size", wire.HeaderLenV1, math.MaxInt32, func(c *Config, n int64) { c.MaxMessageSize = int(n) }),
		func(c *Config) string { return strconv.Itoa(c.MaxMessageSize) }},
	{"socket.send.buffer", "bytes", "SO_SNDBUF of client connections (0, an extension: the system's default with autotuning)",
		intSetter("socket.send.buffer", 0, math.MaxInt32, func(c *Config, n int64) { c.SocketSendBuffer = int(n) }),
		func(c *Config) string { return strconv.Itoa(c.SocketSendBuffer) }},
	{"socket.receive.buffer", "bytes", "SO_RCVBUF of the listening socket and client connections (0, an extension: the system's default)",
		intSetter("socket.receive.buffer", 0, math.MaxInt32, func(c *Config, n int64) { c.SocketReceiveBuffer = int(n) }),
		func(c *Config) string { return strconv.Itoa(c.SocketReceiveBuffer) }},
	{"num.threads", "int", "Kafka 0.7's network thread count; accepted for compatibility, unused (one goroutine per connection)",
		intSetter("num.threads", 1, math.MaxInt32, func(c *Config, n int64) { c.NumThreads = int(n) }),
		func(c *Config) string { return strconv.Itoa(c.NumThreads) }},
	{"enable.zookeeper", "bool", "register the broker and its topics in ZooKeeper",
		boolSetter("enable.zookeeper", func(c *Config, b bool) { c.EnableZookeeper = b }),
		func(c *Config) string { return strconv.FormatBool(c.EnableZookeeper) }},
	{"zk.connect", "string", "ZooKeeper connection string (host:port[,host:port...][/chroot])",
		func(c *Config, v string) error { c.ZkConnect = v; return nil },
		func(c *Config) string { return c.ZkConnect }},
	{"zk.connectiontimeout.ms", "ms", "time allowed to connect to ZooKeeper",
		durationSetter("zk.connectiontimeout.ms", time.Millisecond, 1, func(c *Config) *time.Duration { return &c.ZkConnectionTimeout }),
		func(c *Config) string { return formatDuration(c.ZkConnectionTimeout, time.Millisecond) }},
	{"zk.sessiontimeout.ms", "ms", "ZooKeeper session timeout",
		durationSetter("zk.sessiontimeout.ms", time.Millisecond, 1, func(c *Config) *time.Duration { return &c.ZkSessionTimeout }),
		func(c *Config) string { return formatDuration(c.ZkSessionTimeout, time.Millisecond) }},
	{"zk.synctime.ms", "ms", "how far a ZooKeeper follower may be behind its leader",
		durationSetter("zk.synctime.ms", time.Millisecond, 1, func(c *Config) *time.Duration { return &c.ZkSyncTime }),
		func(c *Config) string { return formatDuration(c.ZkSyncTime, time.Millisecond) }},
	{"fetch.use.sendfile", "bool", "extension, for the sendfile ablation only: false copies fetched bytes through user space",
		boolSetter("fetch.use.sendfile", func(c *Config, b bool) { c.FetchUseSendfile = b }),
		func(c *Config) string { return strconv.FormatBool(c.FetchUseSendfile) }},
	{"metrics.listen", "string", "HOST:PORT of an HTTP listener serving Prometheus metrics at /metrics and segment details at /admin/partitions (empty: none)",
		func(c *Config, v string) error {
			if v != "" {
				if _, _, err := net.SplitHostPort(v); err != nil {
					return invalid("metrics.listen", v, "must be HOST:PORT")
				}
			}
			c.MetricsListen = v
			return nil
		},
		func(c *Config) string { return c.MetricsListen }},

	// The replication layer (broker/replica), Kafka 0.8+ names.
	{"replica.lag.time.max.ms", "ms", "replication: a follower not caught up for this long leaves the ISR",
		durationSetter("replica.lag.time.max.ms", time.Millisecond, 1, func(c *Config) *time.Duration { return &c.ReplicaLagTime }),
		func(c *Config) string { return formatDuration(c.ReplicaLagTime, time.Millisecond) }},
	{"replica.truncation", "string", "replication: how a follower cuts its log for a new leader: epoch (KIP-101) or hw (0.8, loses acknowledged messages)",
		func(c *Config, v string) error {
			if v != "epoch" && v != "hw" {
				return invalid("replica.truncation", v, "must be epoch or hw")
			}
			c.ReplicaTruncation = v
			return nil
		},
		func(c *Config) string { return c.ReplicaTruncation }},
	{"min.insync.replicas", "int", "replication: an acks=-1 produce needs at least this many in-sync replicas",
		intSetter("min.insync.replicas", 1, math.MaxInt32, func(c *Config, n int64) { c.MinInsyncReplicas = int(n) }),
		func(c *Config) string { return strconv.Itoa(c.MinInsyncReplicas) }},
	{"unclean.leader.election.enable", "bool", "replication: let an out-of-sync replica lead when no in-sync one is alive (may lose messages)",
		boolSetter("unclean.leader.election.enable", func(c *Config, b bool) { c.UncleanLeaderElection = b }),
		func(c *Config) string { return strconv.FormatBool(c.UncleanLeaderElection) }},
	{"replica.fetch.max.bytes", "bytes", "replication: bytes a follower asks for per fetch",
		intSetter("replica.fetch.max.bytes", 64, math.MaxInt32, func(c *Config, n int64) { c.ReplicaFetchMaxBytes = int(n) }),
		func(c *Config) string { return strconv.Itoa(c.ReplicaFetchMaxBytes) }},
	{"replica.fetch.wait.max.ms", "ms", "replication: how long a leader holds a follower's fetch when it has nothing new",
		durationSetter("replica.fetch.wait.max.ms", time.Millisecond, 0, func(c *Config) *time.Duration { return &c.ReplicaFetchWait }),
		func(c *Config) string { return formatDuration(c.ReplicaFetchWait, time.Millisecond) }},
	{"replica.fetch.backoff.ms", "ms", "replication: wait before retrying a failed follower fetch",
		durationSetter("replica.fetch.backoff.ms", time.Millisecond, 1, func(c *Config) *time.Duration { return &c.ReplicaFetchBackoff }),
		func(c *Config) string { return formatDuration(c.ReplicaFetchBackoff, time.Millisecond) }},
	{"replica.high.watermark.checkpoint.interval.ms", "ms", "replication: how often each replica writes its high watermark to disk",
		durationSetter("replica.high.watermark.checkpoint.interval.ms", time.Millisecond, 1, func(c *Config) *time.Duration { return &c.ReplicaHWCheckpointInterval }),
		func(c *Config) string { return formatDuration(c.ReplicaHWCheckpointInterval, time.Millisecond) }},
}

func lookupKey(name string) *key {
	for i := range keys {
		if keys[i].name == name {
			return &keys[i]
		}
	}
	return nil
}

// KeyNames returns the name of every configuration key, in --help order.
func KeyNames() []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.name
	}
	return names
}

// Set sets the field of the named key from its text form (surrounding
// blanks ignored). An unknown key or a bad value is an error naming both.
func (c *Config) Set(name, value string) error {
	k := lookupKey(name)
	if k == nil {
		return fmt.Errorf("%w: unknown key %q", ErrInvalidConfig, name)
	}
	return k.set(c, strings.TrimSpace(value))
}

// Get returns the text form of the named key's value.
func (c *Config) Get(name string) (string, error) {
	k := lookupKey(name)
	if k == nil {
		return "", fmt.Errorf("%w: unknown key %q", ErrInvalidConfig, name)
	}
	return k.get(c), nil
}

func invalid(name, value, reason string) error {
	return fmt.Errorf("%w: %s=%q: %s", ErrInvalidConfig, name, value, reason)
}

func parseInt(name, v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, invalid(name, v, "not an integer")
	}
	if n < lo || n > hi {
		return 0, invalid(name, v, fmt.Sprintf("must be in [%d, %d]", lo, hi))
	}
	return n, nil
}

func parseBool(name, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, invalid(name, v, "must be true or false")
}

// intSetter parses an integer in [lo, hi] and assigns it; a bad value
// leaves the Config unchanged.
func intSetter(name string, lo, hi int64, assign func(*Config, int64)) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := parseInt(name, v, lo, hi)
		if err != nil {
			return err
		}
		assign(c, n)
		return nil
	}
}

// boolSetter parses true or false and assigns it.
func boolSetter(name string, assign func(*Config, bool)) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := parseBool(name, v)
		if err != nil {
			return err
		}
		assign(c, b)
		return nil
	}
}

// durationSetter parses an integer count of unit in [lo, MaxInt32].
func durationSetter(name string, unit time.Duration, lo int64, field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := parseInt(name, v, lo, math.MaxInt32)
		if err != nil {
			return err
		}
		*field(c) = time.Duration(n) * unit
		return nil
	}
}

// formatDuration shows d as a count of unit, or as a Go duration when it is
// not a whole number of units (set by a program, not a key).
func formatDuration(d, unit time.Duration) string {
	if d%unit == 0 {
		return strconv.FormatInt(int64(d/unit), 10)
	}
	return d.String()
}

// parseTopicMap parses Kafka 0.7's "topic1:v1,topic2:v2" lists; values are
// integers of at least lo. Empty entries are skipped.
func parseTopicMap(name, v string, lo int64) (map[string]int64, error) {
	m := make(map[string]int64)
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		topic, num, ok := strings.Cut(entry, ":")
		topic, num = strings.TrimSpace(topic), strings.TrimSpace(num)
		if !ok {
			return nil, invalid(name, v, fmt.Sprintf("entry %q is not topic:value", entry))
		}
		if err := wire.ValidateTopic(topic); err != nil {
			return nil, invalid(name, v, fmt.Sprintf("entry %q: %v", entry, err))
		}
		if _, dup := m[topic]; dup {
			return nil, invalid(name, v, fmt.Sprintf("topic %q appears twice", topic))
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n < lo || n > math.MaxInt32 {
			return nil, invalid(name, v, fmt.Sprintf("entry %q: value must be an integer in [%d, %d]", entry, lo, math.MaxInt32))
		}
		m[topic] = n
	}
	return m, nil
}

func formatTopicMap[V any](m map[string]V, format func(V) string) string {
	topics := make([]string, 0, len(m))
	for t := range m {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	parts := make([]string, len(topics))
	for i, t := range topics {
		parts[i] = t + ":" + format(m[t])
	}
	return strings.Join(parts, ",")
}
