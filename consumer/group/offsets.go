package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// This file holds the administration of a group's offsets used by the
// tools: the offset checker (0.7's ConsumerOffsetChecker) and the reset of
// a stopped group (0.7's UpdateOffsetsInZK, extended to a time), which
// rewinds a group so that it replays (paper §3.1, "stateless broker").

// PartitionStatus is one partition of a group's topic as the offset checker
// shows it.
type PartitionStatus struct {
	// Topic and Partition name the partition.
	Topic     string
	Partition wire.BrokerPartition
	// Committed is the group's committed offset; HasCommitted is false when
	// the group never committed one.
	Committed    wire.Offset
	HasCommitted bool
	// LogEnd is the partition's latest offset from its broker; LogEndErr
	// says why it is unknown (broker down or not registered).
	LogEnd    wire.Offset
	LogEndErr error
	// Owner is the consumer thread owning the partition ("" if none).
	Owner string
}

// Lag is LogEnd minus Committed, when both are known.
func (s PartitionStatus) Lag() (int64, bool) {
	if !s.HasCommitted || s.LogEndErr != nil {
		return 0, false
	}
	return int64(s.LogEnd - s.Committed), true
}

// Status reads, for each topic (when topics is empty, the group's topics:
// groupTopics), every partition registered by a broker or holding an offset
// of the group: its committed offset, owner and log end. cfg supplies the
// group id, zk.connect and the broker connections. It also returns the live
// brokers.
func Status(ctx context.Context, cfg Config, topics []string) ([]PartitionStatus, map[wire.BrokerID]zkcoord.BrokerInfo, error) {
	conn, err := dialAdmin(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	if len(topics) == 0 {
		if topics, err = groupTopics(conn, cfg.GroupID); err != nil {
			return nil, nil, err
		}
	}
	brokers, err := zkcoord.RegistryOn(conn).Brokers(false)
	if err != nil {
		return nil, nil, err
	}
	pool := newBrokerPool(cfg, conn, brokers)
	defer pool.close()
	var out []PartitionStatus
	for _, topic := range sortedUnique(topics) {
		parts, err := topicPartitions(conn, cfg.GroupID, topic)
		if err != nil {
			return nil, nil, err
		}
		for _, bp := range parts {
			st := PartitionStatus{Topic: topic, Partition: bp}
			if st.Committed, st.HasCommitted, err = zkcoord.GroupsOn(conn).Offset(cfg.GroupID, topic, bp); err != nil {
				return nil, nil, err
			}
			if st.Owner, _, err = zkcoord.GroupsOn(conn).PartitionOwner(cfg.GroupID, topic, bp); err != nil {
				return nil, nil, err
			}
			st.LogEnd, st.LogEndErr = pool.offsetBefore(ctx, topic, bp, wire.LatestTime)
			out = append(out, st)
		}
	}
	return out, brokers, nil
}

// groupTopics lists, sorted, the topics of a group: those it has
// committed offsets for, those its consumers own partitions of, and those
// its registered consumers subscribe to (a wildcard resolved against
// /brokers/topics). Before a group's first commit its topics are known
// only from the last two.
func groupTopics(conn *zkcoord.Conn, group string) ([]string, error) {
	offsets, err := zkcoord.GroupsOn(conn).OffsetTopics(group)
	if err != nil {
		return nil, err
	}
	owned, err := zkcoord.GroupsOn(conn).OwnerTopics(group)
	if err != nil {
		return nil, err
	}
	members, err := zkcoord.GroupsOn(conn).GroupMembers(group, false)
	if err != nil {
		return nil, err
	}
	topics := append(offsets, owned...)
	if len(members) > 0 {
		all, err := zkcoord.RegistryOn(conn).Topics(false)
		if err != nil {
			return nil, err
		}
		for t := range zkcoord.ThreadsPerTopic(members, all) {
			topics = append(topics, t)
		}
	}
	return sortedUnique(topics), nil
}

// topicPartitions is the union of the partitions brokers registered for the
// topic (or its replica assignment) and those the group has offsets for,
// sorted by broker and partition.
func topicPartitions(conn *zkcoord.Conn, group, topic string) ([]wire.BrokerPartition, error) {
	set := map[wire.BrokerPartition]bool{}
	registered, err := zkcoord.GroupsOn(conn).GroupPartitionNames(topic, false)
	if err != nil {
		return nil, err
	}
	for _, name := range registered {
		bp, err := zkcoord.ParsePartitionNodeName(name)
		if err != nil {
			return nil, err
		}
		set[bp] = true
	}
	committed, err := zkcoord.GroupsOn(conn).OffsetPartitions(group, topic)
	if err != nil {
		return nil, err
	}
	for _, bp := range committed {
		set[bp] = true
	}
	out := make([]wire.BrokerPartition, 0, len(set))
	for bp := range set {
		out = append(out, bp)
	}
	slices.SortFunc(out, wire.BrokerPartition.Compare)
	return out, nil
}

// ErrGroupActive: the group has live consumers, so its offsets must not be reset.
var ErrGroupActive = errors.New("group: the group has live consumers; stop them first")

// Reset is one partition's offset change made (or planned) by ResetOffsets.
type Reset struct {
	// Topic and Partition name the partition.
	Topic     string
	Partition wire.BrokerPartition
	// Old is the previous committed offset (HadOld false if none).
	Old    wire.Offset
	HadOld bool
	// New is the offset written.
	New wire.Offset
}

// ResetOffsets sets the committed offset of every partition of each topic
// registered by a live broker to the offset the broker reports for at:
// wire.EarliestTime (-2), wire.LatestTime (-1), or a time in Unix
// milliseconds, meaning the start of the newest log segment last written
// before it (the granularity of the OFFSETS request; the earliest offset
// when every segment is newer). The group must be stopped: with live
// consumers it fails with ErrGroupActive. With dryRun nothing is written.
func ResetOffsets(ctx context.Context, cfg Config, topics []string, at int64, dryRun bool) ([]Reset, error) {
	if len(topics) == 0 {
		return nil, fmt.Errorf("group: no topic to reset")
	}
	if at < wire.EarliestTime {
		return nil, fmt.Errorf("group: bad reset time %d", at)
	}
	conn, err := dialAdmin(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	members, err := zkcoord.GroupsOn(conn).GroupMembers(cfg.GroupID, false)
	if err != nil {
		return nil, err
	}
	if len(members) > 0 {
		ids := make([]string, 0, len(members))
		for id := range members {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		return nil, fmt.Errorf("%w: %v", ErrGroupActive, ids)
	}
	brokers, err := zkcoord.RegistryOn(conn).Brokers(false)
	if err != nil {
		return nil, err
	}
	pool := newBrokerPool(cfg, conn, brokers)
	defer pool.close()
	var out []Reset
	for _, topic := range sortedUnique(topics) {
		names, err := zkcoord.GroupsOn(conn).GroupPartitionNames(topic, false)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return out, fmt.Errorf("group: topic %s is not registered by any live broker", topic)
		}
		for _, name := range names {
			bp, err := zkcoord.ParsePartitionNodeName(name)
			if err != nil {
				return out, err
			}
			off, err := pool.offsetBefore(ctx, topic, bp, at)
			if err != nil {
				return out, err
			}
			r := Reset{Topic: topic, Partition: bp, New: off}
			if r.Old, r.HadOld, err = zkcoord.GroupsOn(conn).Offset(cfg.GroupID, topic, bp); err != nil {
				return out, err
			}
			if !dryRun {
				if err := zkcoord.GroupsOn(conn).CommitOffset(cfg.GroupID, topic, bp, off); err != nil {
					return out, err
				}
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func dialAdmin(ctx context.Context, cfg Config) (*zkcoord.Conn, error) {
	if cfg.GroupID == "" {
		return nil, fmt.Errorf("group: no group id")
	}
	if err := zkcoord.ValidateName("group", cfg.GroupID); err != nil {
		return nil, err
	}
	timeout := cfg.ZkSessionTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return zkcoord.Dial(ctx, zkcoord.Config{
		Connect:           cfg.ZkConnect,
		SessionTimeout:    timeout,
		ConnectionTimeout: cfg.ZkConnectionTimeout,
		Logger:            cfg.Logger,
		Dial:              cfg.ZkDial,
	})
}

// brokerPool keeps one connection per broker for the tools.
type brokerPool struct {
	cfg     Config
	zk      *zkcoord.Conn // finds replicated partitions' leaders
	brokers map[wire.BrokerID]zkcoord.BrokerInfo
	conns   map[wire.BrokerID]Broker
}

func newBrokerPool(cfg Config, zk *zkcoord.Conn, brokers map[wire.BrokerID]zkcoord.BrokerInfo) *brokerPool {
	return &brokerPool{cfg: cfg, zk: zk, brokers: brokers, conns: make(map[wire.BrokerID]Broker)}
}

// offsetBefore asks the partition's broker (a replicated partition's
// leader) for the offset at t (see ResetOffsets); a time before every
// segment gives the earliest offset.
func (p *brokerPool) offsetBefore(ctx context.Context, topic string, bp wire.BrokerPartition, t int64) (wire.Offset, error) {
	id := bp.Broker
	if zkcoord.IsReplicated(bp) {
		info, _, err := zkcoord.GroupsOn(p.zk).PartitionLeader(topic, bp.Partition)
		if err != nil {
			return 0, err
		}
		id = info.ID
		p.brokers[id] = info
	}
	b, ok := p.conns[id]
	if !ok {
		info, live := p.brokers[id]
		if !live {
			return 0, fmt.Errorf("broker %d is not registered (down?)", id)
		}
		var err error
		if b, err = p.cfg.dialBroker(info.Addr(), p.cfg.Logger); err != nil {
			return 0, err
		}
		p.conns[id] = b
	}
	offs, err := b.OffsetsBefore(ctx, topic, bp.Partition, t, 1)
	if err != nil {
		return 0, err
	}
	if len(offs) == 0 && t >= 0 {
		offs, err = b.OffsetsBefore(ctx, topic, bp.Partition, wire.EarliestTime, 1)
		if err != nil {
			return 0, err
		}
	}
	if len(offs) == 0 {
		return 0, fmt.Errorf("broker %d gave no offset for %s partition %d", bp.Broker, topic, bp.Partition)
	}
	return offs[0], nil
}

func (p *brokerPool) close() {
	for id, b := range p.conns {
		if err := b.Close(); err != nil && p.cfg.Logger != nil {
			p.cfg.Logger.Warn("closing a broker connection", "broker", id, "err", err)
		}
	}
}

func sortedUnique(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// DeleteGroup removes the group's registry, /consumers/<group> with its
// offsets, so that the group starts afresh (0.7's ConsoleConsumer does it
// for --from-beginning, and for its throw-away group at exit). It fails with
// ErrGroupActive while a consumer is registered: close it first.
func DeleteGroup(ctx context.Context, cfg Config) error {
	conn, err := dialAdmin(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	members, err := zkcoord.GroupsOn(conn).GroupMembers(cfg.GroupID, false)
	if err != nil {
		return err
	}
	if len(members) > 0 {
		live := make([]string, 0, len(members))
		for id := range members {
			live = append(live, id)
		}
		sort.Strings(live)
		return fmt.Errorf("%w: %v", ErrGroupActive, live)
	}
	return conn.DeleteAll(zkcoord.GroupPath(cfg.GroupID))
}
