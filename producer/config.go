package producer

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/broker/props"
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
	// size field of one message (its header, 5 or 6 bytes, plus its
	// payload), compressed sets included: the broker's rule,
	// wire.OverMaxSize.
	MaxMessageSize int
	// Confirm is confirm: when the producer proves that the broker took what
	// it sent, with a round trip on the connection (brokerConn.confirm).
	// ConfirmSend ends every sync Send, and every async batch, with one: a
	// Send that returns nil has been appended, and a refused one returns an
	// error naming the broker, topic and partition. ConfirmClose confirms
	// what is unconfirmed on a connection when it closes (Close,
	// reconnect.interval) and, in async mode, whenever the send queue runs
	// empty, and counts what a closed connection leaves unconfirmed as not
	// delivered (Stats, and Close's *LossError): no loss goes uncounted, and
	// losses are reported late. Empty means ConfirmSend for
	// sync and ConfirmClose for async. With request.required.acks 1 or -1
	// every send is confirmed (ConfirmSend; confirm=close is refused), on
	// a replicated topic by its PRODUCE_ACKS answer instead of a round trip. Deviation: Kafka 0.7's producer
	// never learns whether the broker took a request (PRODUCE has no
	// response); the round trip is an OFFSETS request, so the protocol is
	// unchanged.
	//
	// The cost of confirm=send is one round trip per Send (about 80 µs over
	// loopback): kafka-producer-perf-test, 200-byte messages, sync, batch
	// 50, one thread, against a real broker on the same 2-core machine,
	// three alternating runs each: 1.20M-1.86M msg/s with confirm=close,
	// 0.60M-0.62M msg/s with confirm=send. Concurrent Sends overlap their
	// round trips. confirm=send also turns Nagle's algorithm off (see
	// NoDelay), since every request then waits for an answer.
	Confirm Confirm

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

	// RequiredAcks is request.required.acks (0.8; default 0): when the
	// broker acknowledges a send. 0 (wire.AcksNone) is 0.7's PRODUCE, which
	// has no response: the producer of this package as it always was, which
	// asks no metadata and knows no leaders. 1 (wire.AcksLeader) waits until
	// the partition's leader has appended the messages, -1 (wire.AcksAll,
	// also written "all") until every in-sync replica has them (the high
	// watermark passed their end). With 1 or -1 the producer asks a broker
	// for the topic's metadata (METADATA) and sends a replicated topic's
	// messages to each partition's leader in PRODUCE_ACKS requests, whose
	// response is the send's confirmation; see the package doc.
	RequiredAcks int16
	// RequestTimeout is request.timeout.ms (0.8; default 10000): how long
	// a leader may wait for the in-sync replicas before it answers
	// RequestTimedOut (the request's timeout field). The producer waits for
	// the answer this long plus socket.timeout.ms.
	RequestTimeout time.Duration
	// MessageSendMaxRetries is message.send.max.retries (0.8; default 3):
	// how many times a send to a replicated topic is tried again after a
	// retriable failure (no leader, not the leader, a connection failure,
	// NotEnoughReplicas), each time after retry.backoff.ms and a metadata
	// refresh.
	MessageSendMaxRetries int
	// RetryBackoff is retry.backoff.ms (0.8; default 100): the wait before
	// each retry, spent refreshing metadata.
	RetryBackoff time.Duration
	// TopicMetadataRefreshInterval is topic.metadata.refresh.interval.ms
	// (0.8; default 600000): the producer asks again for a topic's metadata
	// when what it knows is older than this, besides after every failure.
	TopicMetadataRefreshInterval time.Duration
	// OnNotReplicated, if set, is called once per topic, with the topic,
	// when request.required.acks 1 or -1 was asked for a topic that is not
	// replicated (no 0.8 assignment, or no broker with the replication
	// layer): its messages go the 0.7 way and are acknowledged by the one
	// broker of their partition, one copy, whatever acks asked. The
	// producer also logs it once at level Warn. Called on the sending
	// goroutine; it must not block.
	OnNotReplicated func(topic string)

	// Logger receives connection events. Nil discards them.
	Logger *slog.Logger

	// Dial, when set, opens every broker connection in place of a
	// net.Dialer (a fault harness dials from a testbed host's network
	// namespace). It must return a *net.TCPConn. Not a 0.7 property.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
}

// Confirm says when a producer confirms its sends; see Config.Confirm.
type Confirm string

// The confirmation modes.
const (
	ConfirmSend  Confirm = "send"
	ConfirmClose Confirm = "close"
)

// confirm resolves the default of Confirm. With request.required.acks 1
// or -1 every send is confirmed (ConfirmSend): by its PRODUCE_ACKS answer on
// a replicated topic, by the round trip on a 0.7 topic.
func (c *Config) confirm() Confirm {
	if c.RequiredAcks != wire.AcksNone {
		return ConfirmSend
	}
	if c.Confirm != "" {
		return c.Confirm
	}
	if c.Type == Async {
		return ConfirmClose
	}
	return ConfirmSend
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

		RequiredAcks:                 wire.AcksNone,
		RequestTimeout:               10000 * time.Millisecond,
		MessageSendMaxRetries:        3,
		RetryBackoff:                 100 * time.Millisecond,
		TopicMetadataRefreshInterval: 600000 * time.Millisecond,
	}
}

// keys binds the Kafka 0.7 producer properties to Config's fields and
// bounds: Set and Validate both go through it.
var keys = props.NewTable("producer",
	props.Func("broker.list", func(c *Config, v string) error { c.BrokerList = v; return nil },
		func(c *Config) error {
			if c.Cluster != nil || c.ZkConnect != "" {
				return nil
			}
			if _, err := wire.ParseBrokerList(c.BrokerList); err != nil {
				return fmt.Errorf("%v (or set zk.connect)", err)
			}
			return nil
		}),
	props.String("zk.connect", func(c *Config) *string { return &c.ZkConnect }, nil),
	props.Millis("zk.sessiontimeout.ms", 1, math.MaxInt64, "", func(c *Config) *time.Duration { return &c.ZkSessionTimeout }).When(usesZooKeeper),
	props.Millis("zk.connectiontimeout.ms", 1, math.MaxInt64, "", func(c *Config) *time.Duration { return &c.ZkConnectionTimeout }).When(usesZooKeeper),
	props.Func("producer.type", func(c *Config, v string) error { c.Type = Type(strings.TrimSpace(v)); return nil },
		func(c *Config) error {
			if c.Type != Sync && c.Type != Async {
				return props.Invalid("producer.type", strconv.Quote(string(c.Type)), "valid values are sync and async")
			}
			return nil
		}),
	props.Func("compression.codec", func(c *Config, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return props.Invalid("compression.codec", strconv.Quote(v), "not an integer")
		}
		c.CompressionCodec = wire.Codec(n)
		return nil
	}, func(c *Config) error {
		if c.CompressionCodec < wire.CodecNone || c.CompressionCodec > wire.CodecSnappy {
			return props.Invalid("compression.codec", int(c.CompressionCodec), "valid values are 0 (none), 1 (gzip) and 2 (snappy)")
		}
		return nil
	}),
	props.Func("compressed.topics", func(c *Config, v string) error {
		c.CompressedTopics = nil
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				c.CompressedTopics = append(c.CompressedTopics, t)
			}
		}
		return nil
	}, nil),
	props.Int("batch.size", 1, math.MaxInt, "", func(c *Config) *int { return &c.BatchSize }),
	props.Millis("queue.time", 1, math.MaxInt64, "", func(c *Config) *time.Duration { return &c.QueueTime }),
	props.Int("queue.size", 1, math.MaxInt, "", func(c *Config) *int { return &c.QueueSize }),
	props.Millis("queue.enqueueTimeout.ms", math.MinInt64, math.MaxInt64, "", func(c *Config) *time.Duration { return &c.EnqueueTimeout }),
	props.Millis("socket.timeout.ms", 0, math.MaxInt64, "0: no timeout", func(c *Config) *time.Duration { return &c.SocketTimeout }),
	props.Millis("connect.timeout.ms", 1, math.MaxInt64, "", func(c *Config) *time.Duration { return &c.ConnectTimeout }),
	props.Int("buffer.size", 0, math.MaxInt, "0: the system's default", func(c *Config) *int { return &c.BufferSize }),
	props.Int("reconnect.interval", 1, math.MaxInt, "", func(c *Config) *int { return &c.ReconnectInterval }),
	props.Millis("reconnect.time.interval.ms", math.MinInt64, math.MaxInt64, "", func(c *Config) *time.Duration { return &c.ReconnectTimeInterval }),
	props.Int("max.message.size", 1, math.MaxInt, "", func(c *Config) *int { return &c.MaxMessageSize }),
	props.Func("confirm", func(c *Config, v string) error { c.Confirm = Confirm(strings.TrimSpace(v)); return nil },
		func(c *Config) error {
			if c.Confirm != "" && c.Confirm != ConfirmSend && c.Confirm != ConfirmClose {
				return props.Invalid("confirm", strconv.Quote(string(c.Confirm)), "valid values are send and close (empty: send for sync, close for async)")
			}
			if c.Confirm == ConfirmClose && c.RequiredAcks != wire.AcksNone {
				return props.Invalid("confirm", strconv.Quote(string(c.Confirm)),
					fmt.Sprintf("request.required.acks=%d confirms every send; confirm=close needs request.required.acks=0", c.RequiredAcks))
			}
			return nil
		}),
	props.Func("request.required.acks", func(c *Config, v string) error {
		n, err := ParseAcks(v)
		if err != nil {
			return err
		}
		c.RequiredAcks = n
		return nil
	}, func(c *Config) error {
		if c.RequiredAcks != wire.AcksNone && c.RequiredAcks != wire.AcksLeader && c.RequiredAcks != wire.AcksAll {
			return props.Invalid("request.required.acks", int(c.RequiredAcks), "valid values are 0 (no response), 1 (the leader appended) and -1 or all (every in-sync replica has it)")
		}
		return nil
	}),
	props.Millis("request.timeout.ms", 1, math.MaxInt32, "", func(c *Config) *time.Duration { return &c.RequestTimeout }).When(usesAcks),
	props.Int("message.send.max.retries", 0, math.MaxInt32, "", func(c *Config) *int { return &c.MessageSendMaxRetries }).When(usesAcks),
	props.Millis("retry.backoff.ms", 0, math.MaxInt64, "", func(c *Config) *time.Duration { return &c.RetryBackoff }).When(usesAcks),
	props.Millis("topic.metadata.refresh.interval.ms", 0, math.MaxInt64, "0: ask before every send", func(c *Config) *time.Duration { return &c.TopicMetadataRefreshInterval }).When(usesAcks),
)

func usesAcks(c *Config) bool { return c.RequiredAcks != wire.AcksNone }

// ParseAcks parses a request.required.acks value: 0, 1, -1 or "all" (-1,
// the later Java producer's spelling).
func ParseAcks(v string) (int16, error) {
	v = strings.TrimSpace(v)
	if strings.EqualFold(v, "all") {
		return wire.AcksAll, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || (n != 0 && n != 1 && n != -1) {
		return 0, props.Invalid("request.required.acks", strconv.Quote(v), "valid values are 0 (no response), 1 (the leader appended) and -1 or all (every in-sync replica has it)")
	}
	return int16(n), nil
}

func usesZooKeeper(c *Config) bool { return c.ZkConnect != "" }

// Keys lists the 0.7 properties that Set understands.
var Keys = keys.Names()

// Set assigns the field of a Kafka 0.7 producer property, e.g.
// Set("batch.size", "50"), and checks its bounds. Unknown keys, unparsable
// and out-of-bounds values are errors.
func (c *Config) Set(key, value string) error { return keys.Set(c, key, value) }

// Validate checks every field and reports each bad one precisely.
func (c *Config) Validate() error { return keys.Validate(c) }

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
