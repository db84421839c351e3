package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/consumer"

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
	// AutoOffsetReset is autooffset.reset (smallest): where a partition
	// without a committed offset, or whose offset left the log, starts.
	AutoOffsetReset string
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

// Set sets the field of a 0.7 consumer property from its text value.
func (c *Config) Set(key, value string) error {
	value = strings.TrimSpace(value)
	ms := func(d *time.Duration) error {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return fmt.Errorf("%s=%q: want milliseconds", key, value)
		}
		*d = time.Duration(n) * time.Millisecond
		return nil
	}
	integer := func(p *int) error {
		n, err := strconv.Atoi(value)
		if err != nil {
			return fmt.Errorf("%s=%q: want an integer", key, value)
		}
		*p = n
		return nil
	}
	switch key {
	case "groupid":
		c.GroupID = value
	case "consumerid":
		c.ConsumerID = value
	case "zk.connect":
		c.ZkConnect = value
	case "zk.sessiontimeout.ms":
		return ms(&c.ZkSessionTimeout)
	case "zk.connectiontimeout.ms":
		return ms(&c.ZkConnectionTimeout)
	case "zk.synctime.ms", "rebalance.backoff.ms":
		return ms(&c.RebalanceBackoff)
	case "socket.timeout.ms":
		return ms(&c.SocketTimeout)
	case "socket.buffersize":
		return integer(&c.SocketBufferSize)
	case "fetch.size":
		return integer(&c.FetchSize)
	case "fetcher.backoff.ms", "backoff.increment.ms":
		return ms(&c.FetcherBackoff)
	case "queuedchunks.max":
		return integer(&c.QueuedChunks)
	case "autocommit.enable":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("%s=%q: want true or false", key, value)
		}
		c.AutoCommit = b
	case "autocommit.interval.ms":
		return ms(&c.AutoCommitInterval)
	case "autooffset.reset":
		c.AutoOffsetReset = value
	case "rebalance.retries.max":
		return integer(&c.RebalanceRetries)
	case "consumer.timeout.ms":
		return ms(&c.ConsumerTimeout)
	default:
		return fmt.Errorf("unknown consumer property %q", key)
	}
	return nil
}

// Validate reports every bad field, each with its key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key string, v any, why string) {
		errs = append(errs, fmt.Errorf("%s=%v: %s", key, v, why))
	}
	if c.GroupID == "" {
		bad("groupid", `""`, "must be set")
	} else if strings.ContainsAny(c.GroupID, "/\x00") || c.GroupID == "." || c.GroupID == ".." {
		bad("groupid", c.GroupID, "must be usable as a ZooKeeper node name")
	}
	if c.ConsumerID != "" && (strings.ContainsAny(c.ConsumerID, "/\x00") || c.ConsumerID == "." || c.ConsumerID == "..") {
		bad("consumerid", c.ConsumerID, "must be usable as a ZooKeeper node name")
	}
	if c.ZkConnect == "" {
		bad("zk.connect", `""`, "must be set")
	}
	if c.ZkSessionTimeout <= 0 {
		bad("zk.sessiontimeout.ms", c.ZkSessionTimeout.Milliseconds(), "must be positive")
	}
	if c.ZkConnectionTimeout < 0 {
		bad("zk.connectiontimeout.ms", c.ZkConnectionTimeout.Milliseconds(), "must not be negative (0: the session timeout)")
	}
	if c.SocketTimeout < 0 {
		bad("socket.timeout.ms", c.SocketTimeout.Milliseconds(), "must not be negative (0: no timeout)")
	}
	if c.SocketBufferSize < 0 {
		bad("socket.buffersize", c.SocketBufferSize, "must not be negative")
	}
	if c.FetchSize < 1 || c.FetchSize > 1<<30 {
		bad("fetch.size", c.FetchSize, "must be in 1..1073741824")
	}
	if c.FetcherBackoff < 0 {
		bad("fetcher.backoff.ms", c.FetcherBackoff.Milliseconds(), "must not be negative")
	}
	if c.QueuedChunks < 1 {
		bad("queuedchunks.max", c.QueuedChunks, "must be at least 1")
	}
	if c.AutoCommit && c.AutoCommitInterval <= 0 {
		bad("autocommit.interval.ms", c.AutoCommitInterval.Milliseconds(), "must be positive")
	}
	if c.AutoOffsetReset != OffsetSmallest && c.AutoOffsetReset != OffsetLargest {
		bad("autooffset.reset", c.AutoOffsetReset, `must be "smallest" or "largest"`)
	}
	if c.RebalanceRetries < 1 {
		bad("rebalance.retries.max", c.RebalanceRetries, "must be at least 1")
	}
	if c.RebalanceBackoff < 0 {
		bad("rebalance.backoff.ms", c.RebalanceBackoff.Milliseconds(), "must not be negative")
	}
	if c.ConsumerTimeout == 0 {
		bad("consumer.timeout.ms", 0, "must be positive or negative (-1: wait forever)")
	}
	if len(errs) > 0 {
		return fmt.Errorf("group: invalid consumer config: %w", errors.Join(errs...))
	}
	return nil
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
