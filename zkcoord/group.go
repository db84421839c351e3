package zkcoord

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/netdb11/kafka/broker/wire"
)

// Groups is the consumer-group registry on a session (Paper §3.2, 0.7's
// layout): /consumers/<group>/ids, owners and offsets, and where a
// replicated partition's leader is (groupreplicated.go). The group
// consumer, kafka-ui and the offset tools use it. Make one with GroupsOn.
type Groups struct{ s *Conn }

// GroupsOn returns the consumer-group role on session s.
func GroupsOn(s *Conn) Groups { return Groups{s: s} }

// This file is the consumer-group registry of Paper §3.2 in 0.7's layout:
// /consumers/<group>/ids, owners and offsets. The rebalance itself (when to
// read what, claim and release) belongs to the group consumer's event loop.

// RegisterConsumer creates the consumer's ephemeral node
// /consumers/<group>/ids/<consumerId> holding its subscription.
func (g Groups) RegisterConsumer(group, consumerID string, s Subscription) error {
	c := g.s
	if err := ValidateName("group", group); err != nil {
		return err
	}
	if err := ValidateName("consumer id", consumerID); err != nil {
		return err
	}
	return c.CreateEphemeral(ConsumerPath(group, consumerID), []byte(s.String()))
}

// GroupMembers reads the group's registered consumers and their
// subscriptions. With watch, a consumer joining or leaving fires an
// EventChildren on /consumers/<group>/ids.
func (g Groups) GroupMembers(group string, watch bool) (map[string]Subscription, error) {
	c := g.s
	if err := ValidateName("group", group); err != nil {
		return nil, err
	}
	ids, err := c.children(GroupIDsPath(group), watch)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Subscription, len(ids))
	for _, id := range ids {
		data, ok, err := c.GetMaybe(ConsumerPath(group, id))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		s, err := ParseSubscription(string(data))
		if err != nil {
			c.log.Warn("ignoring consumer with a bad subscription", "path", ConsumerPath(group, id), "err", err)
			continue
		}
		out[id] = s
	}
	return out, nil
}

// ThreadsPerTopic is 0.7's getConsumersPerTopic: for each topic, the sorted
// thread ids of every group member consuming it. allTopics (the children of
// /brokers/topics) resolves wildcard subscriptions.
func ThreadsPerTopic(members map[string]Subscription, allTopics []string) map[string][]string {
	out := make(map[string][]string)
	for id, s := range members {
		for t, threads := range s.ThreadIDs(id, allTopics) {
			out[t] = append(out[t], threads...)
		}
	}
	for t := range out {
		sort.Strings(out[t])
	}
	return out
}

// ClaimPartition makes threadID the owner of the partition by creating the
// ephemeral owner node. If another thread owns it, the error is an
// *OwnedError (errors.Is ErrPartitionOwned); the caller releases what it
// claimed and retries after rebalance.backoff.ms, as 0.7 does.
func (g Groups) ClaimPartition(group, topic string, p wire.BrokerPartition, threadID string) error {
	c := g.s
	if err := validateGroupTopic(group, topic); err != nil {
		return err
	}
	err := c.CreateEphemeral(OwnerPath(group, topic, p), []byte(threadID))
	var ne *NodeExistsError
	if errors.As(err, &ne) {
		return &OwnedError{Group: group, Topic: topic, Partition: p, Owner: string(ne.Data)}
	}
	return err
}

// ReleasePartition deletes the owner node if this session owns it. A node
// created by another session (after this one expired) is left alone.
func (g Groups) ReleasePartition(group, topic string, p wire.BrokerPartition) error {
	c := g.s
	if err := validateGroupTopic(group, topic); err != nil {
		return err
	}
	_, err := c.DeleteOwned(OwnerPath(group, topic, p))
	return err
}

// PartitionOwner reads the owner thread id of a partition; ok is false when
// no one owns it.
func (g Groups) PartitionOwner(group, topic string, p wire.BrokerPartition) (owner string, ok bool, err error) {
	c := g.s
	if err := validateGroupTopic(group, topic); err != nil {
		return "", false, err
	}
	data, ok, err := c.GetMaybe(OwnerPath(group, topic, p))
	return string(data), ok, err
}

// Offset reads the group's committed offset of a partition (the offset of
// the next message to consume); ok is false when none was committed.
func (g Groups) Offset(group, topic string, p wire.BrokerPartition) (offset wire.Offset, ok bool, err error) {
	c := g.s
	if err := validateGroupTopic(group, topic); err != nil {
		return 0, false, err
	}
	data, ok, err := c.GetMaybe(OffsetPath(group, topic, p))
	if err != nil || !ok {
		return 0, false, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("zkcoord: %s holds %q, not an offset", OffsetPath(group, topic, p), data)
	}
	return wire.Offset(n), true, nil
}

// CommitOffset writes the group's offset of a partition, in decimal, to the
// persistent node /consumers/<group>/offsets/<topic>/<brokerId>-<partition>.
func (g Groups) CommitOffset(group, topic string, p wire.BrokerPartition, offset wire.Offset) error {
	c := g.s
	if err := validateGroupTopic(group, topic); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("zkcoord: commit offset %d for %s/%s: negative", offset, topic, p)
	}
	return c.SetPersistent(OffsetPath(group, topic, p), []byte(strconv.FormatInt(int64(offset), 10)))
}

// List lists the consumer groups (children of /consumers), sorted.
func (g Groups) List() ([]string, error) {
	c := g.s
	names, err := c.Children(ConsumersPath)
	sort.Strings(names)
	return names, err
}

// OffsetTopics lists the topics the group has offsets for, sorted.
func (g Groups) OffsetTopics(group string) ([]string, error) {
	c := g.s
	if err := ValidateName("group", group); err != nil {
		return nil, err
	}
	names, err := c.Children(OffsetsGroupPath(group))
	sort.Strings(names)
	return names, err
}

// OwnerTopics lists the topics the group has owner nodes under
// (/consumers/<group>/owners/<topic>), sorted: the topics its consumers
// claimed partitions of, committed or not.
func (g Groups) OwnerTopics(group string) ([]string, error) {
	c := g.s
	if err := ValidateName("group", group); err != nil {
		return nil, err
	}
	names, err := c.Children(OwnersGroupPath(group))
	sort.Strings(names)
	return names, err
}

// OffsetPartitions lists the partitions the group has offsets for in a
// topic, sorted by broker then partition (a replicated topic's partitions
// have Broker ReplicatedBroker). Names that do not parse are skipped.
func (g Groups) OffsetPartitions(group, topic string) ([]wire.BrokerPartition, error) {
	c := g.s
	if err := validateGroupTopic(group, topic); err != nil {
		return nil, err
	}
	names, err := c.Children(OffsetsPath(group, topic))
	if err != nil {
		return nil, err
	}
	out := make([]wire.BrokerPartition, 0, len(names))
	for _, n := range names {
		p, err := ParsePartitionNodeName(n)
		if err != nil {
			c.log.Warn("ignoring bad offset node", "path", OffsetsPath(group, topic)+"/"+n, "err", err)
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, wire.BrokerPartition.Compare)
	return out, nil
}

func validateGroupTopic(group, topic string) error {
	if err := ValidateName("group", group); err != nil {
		return err
	}
	return ValidateName("topic", topic)
}
