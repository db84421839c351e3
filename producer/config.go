package producer

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// Type is the producer.type: sync or async.
type Type string

// The producer types of 0.7.
const (
	Sync  Type = "sync"
	Async Type = "async"
)

// Config configures a Producer. Each field names the Kafka 0.7 property it
// stands for; Set assigns a field from that property. Start from
// DefaultConfig.
type Config struct {
	// BrokerList is broker.list, "id:host:port,...". It is used when Cluster
	// is nil and ZkConnect is empty.
	BrokerList string
	// ZkConnect is zk.connect: when set (and Cluster is nil) the producer
	// finds brokers and partitions in ZooKeeper (a ZooKeeperCluster)
	// instead of broker.list, as 0.7 does.
	ZkConnect string
	// ZkSessionTimeout is zk.sessiontimeout.ms (default 6000).
	ZkSessionTimeout time.Duration
	// ZkConnectionTimeout is zk.connectiontimeout.ms (default 6000).
	ZkConnectionTimeout time.Duration
	// Cluster tells where a topic's partitions are. Nil means a
	// ZooKeeperCluster of ZkConnect when that is set, else a StaticCluster
	// of BrokerList.
	Cluster Cluster
	// Type is producer.type (default sync).
	Type Type
	// Partitioner is partitioner.class (default DefaultPartitioner).
	Partitioner Partitioner
	// CompressionCodec is compression.codec: 0 none, 1 gzip, 2 snappy.
	CompressionCodec wire.Codec
	// CompressedTopics is compressed.topics: when a codec is set and this is
	// not empty, only these topics are compressed.
	CompressedTopics []string

	// BatchSize is batch.size (async, default 200): a queue is sent as soon
	// as this many messages wait.
	BatchSize int
	// QueueTime is queue.time (async, default 5000 ms): the longest a
	// message waits before its queue is sent.
	QueueTime time.Duration
	// QueueSize is queue.size (async, default 10000): messages that may wait
	// per broker.
	QueueSize int
	// EnqueueTimeout is queue.enqueueTimeout.ms (async, default 0): how long
	// Send waits for room on a full queue; 0 fails at once with
	// ErrQueueFull, negative waits forever (or until the Send's context
	// ends).
	EnqueueTimeout time.Duration
	// ErrorHandler receives each error of the async send goroutines (an
	// *AsyncError). It may be nil; it must not block for long.
	ErrorHandler func(error)

	// SocketTimeout is socket.timeout.ms (default 30000): the longest one
	// write may block. A deadline is renewed at most every quarter of it, so
	// a write gets between 3/4 and all of it.
	SocketTimeout time.Duration
	// ConnectTimeout is connect.timeout.ms (default 5000): how long to keep
	// trying to connect, with backoff, before a send fails.
	ConnectTimeout time.Duration
	// BufferSize is buffer.size (default 100 KiB): the socket send buffer;
	// 0 keeps the system's (auto-tuned) default.
	BufferSize int
	// ReconnectInterval is reconnect.interval (default 30000): reconnect
	// after this many requests on one connection, so load spreads when
	// brokers sit behind a VIP.
	ReconnectInterval int
	// ReconnectTimeInterval is reconnect.time.interval.ms (default 10^7 ms):
	// reconnect when a connection is older than this; negative disables it.
	ReconnectTimeInterval time.Duration
	// MaxMessageSize is max.message.size (default 1000000): the largest
	// payload of one message, compressed sets included.
	MaxMessageSize int
	// NoDelay sets TCP_NODELAY on broker connections. The default, false,
	// is 0.7's behaviour: its SyncProducer's Java socket never calls
	// setTcpNoDelay, so Nagle's algorithm is on, and while one segment is
	// unacknowledged the following small requests wait in the socket and
	// leave together. Each request is still one write(2) of one whole
	// frame, and PRODUCE has no response to wait for, so the wait is short
	// (the broker acknowledges as it reads); at one message per request it
	// saves both sides most of the per-segment TCP work (on loopback, at
	// one 200-byte message per Send, 1.5 to 1.8 times the messages per
	// second). True sends every request's segment at once.
	NoDelay bool

	// Logger receives connection events. Nil discards them.
	Logger *slog.Logger
}

// DefaultConfig returns Kafka 0.7's producer defaults.
func DefaultConfig() Config {
	return Config{
		Type:                  Sync,
		Partitioner:           DefaultPartitioner{},
		BatchSize:             200,
		QueueTime:             5000 * time.Millisecond,
		QueueSize:             10000,
		SocketTimeout:         30000 * time.Millisecond,
		ConnectTimeout:        5000 * time.Millisecond,
		BufferSize:            100 * 1024,
		ReconnectInterval:     30000,
		ReconnectTimeInterval: 10_000_000 * time.Millisecond,
		MaxMessageSize:        wire.DefaultMaxMessageSize,
		NoDelay:               false,
		ZkSessionTimeout:      6000 * time.Millisecond,
		ZkConnectionTimeout:   6000 * time.Millisecond,
	}
}

// Keys lists the 0.7 properties that Set understands.
var Keys = []string{
	"broker.list", "zk.connect", "zk.sessiontimeout.ms", "zk.connectiontimeout.ms", "producer.type", "compression.codec", "compressed.topics",
	"batch.size", "queue.time", "queue.size", "queue.enqueueTimeout.ms",
	"socket.timeout.ms", "connect.timeout.ms", "buffer.size",
	"reconnect.interval", "reconnect.time.interval.ms", "max.message.size",
}

// Set assigns the field of a Kafka 0.7 producer property, e.g.
// Set("batch.size", "50"). Unknown keys and unparsable values are errors.
func (c *Config) Set(key, value string) error {
	num := func() (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			return 0, fmt.Errorf("%s=%q is not an integer", key, value)
		}
		return n, nil
	}
	ms := func() (time.Duration, error) {
		n, err := num()
		return time.Duration(n) * time.Millisecond, err
	}
	var err error
	switch key {
	case "broker.list":
		c.BrokerList = value
	case "producer.type":
		c.Type = Type(value)
	case "compression.codec":
		var n int
		n, err = num()
		c.CompressionCodec = wire.Codec(n)
	case "compressed.topics":
		c.CompressedTopics = nil
		for _, t := range strings.Split(value, ",") {
			if t = strings.TrimSpace(t); t != "" {
				c.CompressedTopics = append(c.CompressedTopics, t)
			}
		}
	case "batch.size":
		c.BatchSize, err = num()
	case "queue.time":
		c.QueueTime, err = ms()
	case "queue.size":
		c.QueueSize, err = num()
	case "queue.enqueueTimeout.ms":
		c.EnqueueTimeout, err = ms()
	case "socket.timeout.ms":
		c.SocketTimeout, err = ms()
	case "connect.timeout.ms":
		c.ConnectTimeout, err = ms()
	case "buffer.size":
		c.BufferSize, err = num()
	case "reconnect.interval":
		c.ReconnectInterval, err = num()
	case "reconnect.time.interval.ms":
		c.ReconnectTimeInterval, err = ms()
	case "max.message.size":
		c.MaxMessageSize, err = num()
	case "zk.connect":
		c.ZkConnect = strings.TrimSpace(value)
	case "zk.sessiontimeout.ms":
		c.ZkSessionTimeout, err = ms()
	case "zk.connectiontimeout.ms":
		c.ZkConnectionTimeout, err = ms()
	default:
		return fmt.Errorf("unknown producer property %q", key)
	}
	return err
}

// Validate checks every field and reports each bad one precisely.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Cluster == nil && c.ZkConnect == "" {
		if _, err := wire.ParseBrokerList(c.BrokerList); err != nil {
			bad("%v (or set zk.connect)", err)
		}
	}
	if c.ZkConnect != "" {
		if c.ZkSessionTimeout <= 0 {
			bad("zk.sessiontimeout.ms=%v: must be positive", c.ZkSessionTimeout)
		}
		if c.ZkConnectionTimeout <= 0 {
			bad("zk.connectiontimeout.ms=%v: must be positive", c.ZkConnectionTimeout)
		}
	}
	if c.Type != Sync && c.Type != Async {
		bad("producer.type=%q: valid values are sync and async", c.Type)
	}
	if c.CompressionCodec < wire.CodecNone || c.CompressionCodec > wire.CodecSnappy {
		bad("compression.codec=%d: valid values are 0 (none), 1 (gzip) and 2 (snappy)", c.CompressionCodec)
	}
	if c.BatchSize < 1 {
		bad("batch.size=%d: must be at least 1", c.BatchSize)
	}
	if c.QueueTime <= 0 {
		bad("queue.time=%v: must be positive", c.QueueTime)
	}
	if c.QueueSize < 1 {
		bad("queue.size=%d: must be at least 1", c.QueueSize)
	}
	if c.SocketTimeout < 0 {
		bad("socket.timeout.ms=%v: must not be negative (0: no timeout)", c.SocketTimeout)
	}
	if c.ConnectTimeout <= 0 {
		bad("connect.timeout.ms=%v: must be positive", c.ConnectTimeout)
	}
	if c.BufferSize < 0 {
		bad("buffer.size=%d: must not be negative", c.BufferSize)
	}
	if c.ReconnectInterval < 1 {
		bad("reconnect.interval=%d: must be at least 1", c.ReconnectInterval)
	}
	if c.MaxMessageSize < 1 {
		bad("max.message.size=%d: must be at least 1", c.MaxMessageSize)
	}
	return errors.Join(errs...)
}

// compressed reports whether messages to topic are compressed, and how:
// 0.7's rule on compression.codec and compressed.topics.
func (c *Config) compressed(topic string) wire.Codec {
	if c.CompressionCodec == wire.CodecNone || len(c.CompressedTopics) == 0 {
		return c.CompressionCodec
	}
	for _, t := range c.CompressedTopics {
		if t == topic {
			return c.CompressionCodec
		}
	}
	return wire.CodecNone
}
