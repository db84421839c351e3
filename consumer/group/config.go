package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/consumer"

	"github.com/netdb11/kafka/broker/props"
	"github.com/netdb11/kafka/broker/wire"
)

// Values of autooffset.reset.
const (
	// OffsetSmallest starts a partition without a committed offset at the
	// earliest offset the broker holds.
	OffsetSmallest = "smallest"
	// OffsetLargest starts it at the log end: only new messages.
	OffsetLargest = "largest"
)

// Broker is what the group consumer needs from a connection to one broker.
// *consumer.SimpleConsumer implements it.
type Broker interface {
	// MultiFetch sends the fetches in one MULTIFETCH request; the sets may
	// alias a buffer reused by the next request.
	MultiFetch(ctx context.Context, reqs ...consumer.FetchRequest) ([]consumer.MessageSet, error)
	// OffsetsBefore is the OFFSETS request (time -2: earliest, -1: latest).
	OffsetsBefore(ctx context.Context, topic string, partition wire.Partition, t int64, maxNum int) ([]wire.Offset, error)
	// Metadata is the replication layer's METADATA request: the live
	// brokers and the replicated topics' leaders (0.8's
	// TopicMetadataRequest); the group consumer asks it for the leaders of
	// the replicated partitions it owns.
	Metadata(ctx context.Context, topics ...string) (*wire.MetadataResponse, error)
	// Close closes the connection.
	Close() error
}

// Config configures a group consumer with Kafka 0.7's ConsumerConfig keys,
// named in each field's comment. Start from DefaultConfig; Set takes a key
// and a value as a properties file or a command line gives them.
type Config struct {
	// GroupID is groupid: the consumers of one group share the topics'
	// partitions; each group receives every message.
	GroupID string
	// ConsumerID is consumerid: empty generates "<group>_<host>-<ms>-<hex>"
	// (0.7 meant a configured one for tests only).
	ConsumerID string
	// ZkConnect is zk.connect: "host:port[,host:port][/chroot]".
	ZkConnect string
	// ZkSessionTimeout is zk.sessiontimeout.ms (6000).
	ZkSessionTimeout time.Duration
	// ZkConnectionTimeout is zk.connectiontimeout.ms (default: the session timeout).
	ZkConnectionTimeout time.Duration
	// SocketTimeout is socket.timeout.ms (30000).
	SocketTimeout time.Duration
	// SocketBufferSize is socket.buffersize (0: the system's auto-tuning;
	// see consumer.Config).
	SocketBufferSize int
	// FetchSize is fetch.size (1 MiB): bytes asked per partition per fetch.
	// Deviation: 0.7's default is 300 KiB; as consumer.Config.FetchSize.
	FetchSize int
	// FetcherBackoff is fetcher.backoff.ms (1000; 0.7.0 called it
	// backoff.increment.ms): the pause after a fetch that returned nothing.
	FetcherBackoff time.Duration
	// QueuedChunks is queuedchunks.max (10): fetched chunks buffered per stream.
	QueuedChunks int
	// AutoCommit is autocommit.enable (true): commit offsets to ZooKeeper
	// every AutoCommitInterval and at Close.
	AutoCommit bool
	// AutoCommitInterval is autocommit.interval.ms (10000).
	AutoCommitInterval time.Duration
	// ManualAck leaves marking messages consumed to Stream.Ack: Next does
	// not mark the message it returned before, and Ack marks every message
	// the stream has returned, on each of their partitions. A consumer that
	// finishes messages in batches (kafka-mirror: once the target confirmed
	// them) reads a batch with Next and acknowledges it when done, so that
	// no commit, its own, an automatic one or a rebalance's, covers a
	// message it has not finished. Not a 0.7 setting (0.7's consumer counts
	// a message consumed when its iterator returns it).
	ManualAck bool
	// AutoOffsetReset is autooffset.reset (smallest, as 0.7): where a
	// partition whose offset left the log (OffsetOutOfRange: deleted by
	// retention, or past the end) or lies inside a message (InvalidMessage:
	// the log was truncated below it and written again, see
	// Consumer.resetMisplaced) starts again, and, unless StartOffset says
	// otherwise, a partition the group never committed an offset for. A
	// reset is logged at WARN with the bytes it skipped and counted
	// (Consumer.Resets).
	AutoOffsetReset string
	// StartOffset, when set (OffsetSmallest or OffsetLargest), is where a
	// partition without a committed offset starts, instead of
	// AutoOffsetReset. Deviation: 0.7 has one setting for both, so its
	// console consumer, which starts new groups at the log end, also sent a
	// group whose offset retention had deleted to the log end, past every
	// message still held; kafka-console-consumer sets StartOffset instead.
	//
	// Largest concerns the topics there were when the consumer started:
	// a topic that appears later (a wildcard's new match, or a subscribed
	// topic created later) starts at its earliest offset, since everything
	// in it was written after the consumer joined. Deviation: 0.7 started
	// such a topic at the log end too, losing the messages that created it.
	StartOffset string
	// RebalanceRetries is rebalance.retries.max (4).
	RebalanceRetries int
	// RebalanceBackoff is rebalance.backoff.ms (default zk.synctime.ms, 2000).
	RebalanceBackoff time.Duration
	// ConsumerTimeout is consumer.timeout.ms (-1: Next waits forever):
	// Stream.Next returns ErrTimeout when no message came for that long.
	ConsumerTimeout time.Duration

	// Logger receives the consumer's log; nil means slog.Default().
	Logger *slog.Logger
	// DialBroker opens a connection to a broker; nil uses a
	// consumer.SimpleConsumer configured from the fields above.
	DialBroker func(addr string) (Broker, error)
	// ZkDial, when set, replaces net.DialTimeout for ZooKeeper connections
	// (tests use it to force a session expiry).
	ZkDial func(network, address string, timeout time.Duration) (net.Conn, error)
}

// DefaultConfig returns Kafka 0.7's defaults; GroupID and ZkConnect must be set.
func DefaultConfig() Config {
	return Config{
		ZkConnect:          "localhost:2181",
		ZkSessionTimeout:   6000 * time.Millisecond,
		SocketTimeout:      30000 * time.Millisecond,
		FetchSize:          1 << 20,
		FetcherBackoff:     1000 * time.Millisecond,
		QueuedChunks:       10,
		AutoCommit:         true,
		AutoCommitInterval: 10000 * time.Millisecond,
		AutoOffsetReset:    OffsetSmallest,
		RebalanceRetries:   4,
		RebalanceBackoff:   2000 * time.Millisecond,
		ConsumerTimeout:    -1,
	}
}

// nodeName checks that a group or consumer id can name a ZooKeeper node.
func nodeName(key string, field func(c *Config) *string, required bool) func(c *Config) error {
	return func(c *Config) error {
		v := *field(c)
		switch {
		case v == "" && required:
			return props.Invalid(key, `""`, "must be set")
		case v != "" && (strings.ContainsAny(v, "/\x00") || v == "." || v == ".."):
			return props.Invalid(key, v, "must be usable as a ZooKeeper node name")
		}
		return nil
	}
}

var rebalanceBackoff = props.Millis("rebalance.backoff.ms", 0, math.MaxInt64, "", func(c *Config) *time.Duration { return &c.RebalanceBackoff })

var fetcherBackoff = props.Millis("fetcher.backoff.ms", 0, math.MaxInt64, "", func(c *Config) *time.Duration { return &c.FetcherBackoff })

// keys binds the Kafka 0.7 consumer properties to Config's fields and
// bounds: Set and Validate both go through it.
var keys = props.NewTable("consumer",
	props.String("groupid", func(c *Config) *string { return &c.GroupID }, nodeName("groupid", func(c *Config) *string { return &c.GroupID }, true)),
	props.String("consumerid", func(c *Config) *string { return &c.ConsumerID }, nodeName("consumerid", func(c *Config) *string { return &c.ConsumerID }, false)),
	props.String("zk.connect", func(c *Config) *string { return &c.ZkConnect }, func(c *Config) error {
		if c.ZkConnect == "" {
			return props.Invalid("zk.connect", `""`, "must be set")
		}
		return nil
	}),
	props.Millis("zk.sessiontimeout.ms", 1, math.MaxInt64, "", func(c *Config) *time.Duration { return &c.ZkSessionTimeout }),
	props.Millis("zk.connectiontimeout.ms", 0, math.MaxInt64, "0: the session timeout", func(c *Config) *time.Duration { return &c.ZkConnectionTimeout }),
	props.Alias("zk.synctime.ms", rebalanceBackoff),
	props.Millis("socket.timeout.ms", 0, math.MaxInt64, "0: no timeout", func(c *Config) *time.Duration { return &c.SocketTimeout }),
	props.Int("socket.buffersize", 0, math.MaxInt, "", func(c *Config) *int { return &c.SocketBufferSize }),
	props.Int("fetch.size", 1, 1<<30, "", func(c *Config) *int { return &c.FetchSize }),
	fetcherBackoff,
	props.Alias("backoff.increment.ms", fetcherBackoff),
	props.Int("queuedchunks.max", 1, math.MaxInt, "", func(c *Config) *int { return &c.QueuedChunks }),
	props.Bool("autocommit.enable", func(c *Config) *bool { return &c.AutoCommit }),
	props.Millis("autocommit.interval.ms", 1, math.MaxInt64, "", func(c *Config) *time.Duration { return &c.AutoCommitInterval }).
		When(func(c *Config) bool { return c.AutoCommit }),
	props.String("autooffset.reset", func(c *Config) *string { return &c.AutoOffsetReset }, func(c *Config) error {
		if c.AutoOffsetReset != OffsetSmallest && c.AutoOffsetReset != OffsetLargest {
			return props.Invalid("autooffset.reset", c.AutoOffsetReset, `must be "smallest" or "largest"`)
		}
		return nil
	}),
	props.Int("rebalance.retries.max", 1, math.MaxInt, "", func(c *Config) *int { return &c.RebalanceRetries }),
	rebalanceBackoff,
	props.Func("consumer.timeout.ms", func(c *Config, v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return props.Invalid("consumer.timeout.ms", strconv.Quote(v), "not a number of milliseconds")
		}
		c.ConsumerTimeout = time.Duration(n) * time.Millisecond
		return checkConsumerTimeout(c)
	}, checkConsumerTimeout),
)

func checkConsumerTimeout(c *Config) error {
	if c.ConsumerTimeout == 0 {
		return props.Invalid("consumer.timeout.ms", 0, "must be positive or negative (-1: wait forever)")
	}
	return nil
}

// Set sets the field of a 0.7 consumer property from its text value, and
// checks its bounds.
func (c *Config) Set(key, value string) error { return keys.Set(c, key, value) }

// Validate reports every bad field, each with its key.
func (c *Config) Validate() error {
	err := keys.Validate(c)
	if c.StartOffset != "" && c.StartOffset != OffsetSmallest && c.StartOffset != OffsetLargest {
		err = errors.Join(err, fmt.Errorf("StartOffset=%s: must be empty, %q or %q", c.StartOffset, OffsetSmallest, OffsetLargest))
	}
	if err != nil {
		return fmt.Errorf("group: invalid consumer config: %w", err)
	}
	return nil
}

// startOffset is where a partition without a committed offset starts.
func (c *Config) startOffset() string {
	if c.StartOffset != "" {
		return c.StartOffset
	}
	return c.AutoOffsetReset
}

// dialBroker opens a SimpleConsumer for addr with the configured socket settings.
func (c *Config) dialBroker(addr string, log *slog.Logger) (Broker, error) {
	if c.DialBroker != nil {
		return c.DialBroker(addr)
	}
	sc := consumer.DefaultConfig()
	sc.SocketTimeout = c.SocketTimeout
	sc.BufferSize = c.SocketBufferSize
	sc.FetchSize = c.FetchSize
	sc.Logger = log
	return consumer.NewSimpleConsumer(addr, sc)
}
