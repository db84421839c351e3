package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/audit"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/zkcoord"
)

// ReaderConfig configures a Reader.
type ReaderConfig struct {
	// ZkConnect is the cluster's zk.connect ("host:port[/chroot]"): the
	// reader finds the brokers and the topics' partitions there.
	ZkConnect string
	// AuditTopic is the topic of the monitoring events (default
	// audit.AuditTopic).
	AuditTopic string
	// Topics are read besides those the events name.
	Topics []string
	// Only, when set, restricts the audit to the topics it accepts: the
	// events of other topics are ignored (a mirror that copies some topics
	// copies the events of all of them).
	Only func(topic string) bool
	// FetchSize is fetch.size (default 1 MiB).
	FetchSize int
	// Now is the clock that stamps arrivals (default time.Now).
	Now func() time.Time
	// Logger; nil discards.
	Logger *slog.Logger
}

// Reader reads one cluster's audit topic and audited topics, every
// registered partition from its earliest offset, into a Counter: the
// audit at one tier (paper §4). It keeps its own offsets and commits
// nothing, so it disturbs no consumer group.
type Reader struct {
	cfg     ReaderConfig
	counter *Counter
	cluster *zkcoord.Cluster

	mu    sync.Mutex                                      // held by Poll and CatchUp
	conns map[string]*consumer.SimpleConsumer             // per broker address
	parts map[string]map[wire.BrokerPartition]wire.Offset // next offset per topic and partition
}

// NewReader connects to the cluster's ZooKeeper.
func NewReader(ctx context.Context, cfg ReaderConfig, c *Counter) (*Reader, error) {
	if cfg.AuditTopic == "" {
		cfg.AuditTopic = audit.AuditTopic
	}
	if cfg.FetchSize == 0 {
		cfg.FetchSize = 1 << 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	for _, t := range append([]string{cfg.AuditTopic}, cfg.Topics...) {
		if err := wire.ValidateTopic(t); err != nil {
			return nil, fmt.Errorf("consumer/audit: %w", err)
		}
	}
	cl, err := zkcoord.WatchCluster(ctx, zkcoord.Config{Connect: cfg.ZkConnect, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("consumer/audit: %w", err)
	}
	return &Reader{cfg: cfg, counter: c, cluster: cl,
		conns: map[string]*consumer.SimpleConsumer{}, parts: map[string]map[wire.BrokerPartition]wire.Offset{}}, nil
}

// topics returns the audit topic, the configured topics and those the
// events name.
func (r *Reader) topics() []string {
	out := append([]string{r.cfg.AuditTopic}, r.cfg.Topics...)
	for _, t := range r.counter.Topics() {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// Poll fetches once from every registered partition of every topic
// (starting new partitions at their earliest offset) and returns how many
// messages it added.
func (r *Reader) Poll(ctx context.Context) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	total := 0
	var errs []error
	for _, topic := range r.topics() {
		if !r.cluster.Registered(topic) {
			continue
		}
		offs := r.parts[topic]
		if offs == nil {
			offs = map[wire.BrokerPartition]wire.Offset{}
			r.parts[topic] = offs
		}
		for _, bp := range r.cluster.Partitions(topic) {
			n, err := r.pollPartition(ctx, topic, bp, offs)
			total += n
			if err != nil {
				errs = append(errs, fmt.Errorf("topic %s partition %s: %w", topic, bp, err))
			}
		}
	}
	return total, errors.Join(errs...)
}

func (r *Reader) pollPartition(ctx context.Context, topic string, bp wire.BrokerPartition, offs map[wire.BrokerPartition]wire.Offset) (int, error) {
	info, ok := r.cluster.Broker(bp.Broker)
	if !ok {
		return 0, nil // left; its partitions come back with it
	}
	addr := net.JoinHostPort(info.Host, strconv.Itoa(info.Port))
	sc := r.conns[addr]
	if sc == nil {
		cc := consumer.DefaultConfig()
		cc.FetchSize = r.cfg.FetchSize
		cc.Logger = r.cfg.Logger
		var err error
		if sc, err = consumer.NewSimpleConsumer(addr, cc); err != nil {
			return 0, err
		}
		r.conns[addr] = sc
	}
	off, ok := offs[bp]
	if !ok {
		o, err := sc.OffsetsBefore(ctx, topic, bp.Partition, wire.EarliestTime, 1)
		if err != nil {
			return 0, err
		}
		if len(o) > 0 {
			off = o[0]
		}
		offs[bp] = off
	}
	set, err := sc.Fetch(ctx, topic, bp.Partition, off, r.cfg.FetchSize)
	if err != nil {
		return 0, err
	}
	now := r.cfg.Now()
	n := 0
	it := set.Iterator()
	for it.Next() {
		if topic == r.cfg.AuditTopic {
			e, err := audit.DecodeEvent(it.Payload())
			if err != nil {
				r.cfg.Logger.Warn("audit: not a monitoring event", "topic", topic, "partition", bp.String(), "offset", it.NextOffset(), "err", err)
			} else if r.cfg.Only == nil || r.cfg.Only(e.Topic) {
				if err := r.counter.AddEvent(e); err != nil {
					r.cfg.Logger.Warn("audit: refusing a monitoring event", "topic", topic, "partition", bp.String(), "offset", it.NextOffset(), "err", err)
				}
			}
		} else if err := r.counter.AddMessage(topic, it.Payload(), now); err != nil {
			r.cfg.Logger.Debug("audit: message without envelope", "topic", topic, "err", err)
		}
		offs[bp] = it.NextOffset()
		n++
	}
	return n, it.Err()
}

// CatchUp polls until a round adds no message: everything flushed on the
// cluster when it returns has been read (the events first named topics
// included).
func (r *Reader) CatchUp(ctx context.Context) error {
	for {
		n, err := r.Poll(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// Close closes the connections and the ZooKeeper session.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, sc := range r.conns {
		errs = append(errs, sc.Close())
	}
	errs = append(errs, r.cluster.Close())
	return errors.Join(errs...)
}
