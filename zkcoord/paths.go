package zkcoord

import (
	"fmt"
	"strconv"

	"github.com/netdb11/kafka/broker/wire"
)

// Registry roots, as Kafka 0.7's ZkUtils names them.
const (
	// ConsumersPath holds one child per consumer group.
	ConsumersPath = "/consumers"
	// BrokerIDsPath holds one ephemeral child per live broker.
	BrokerIDsPath = "/brokers/ids"
	// BrokerTopicsPath holds one child per topic, and below it one ephemeral
	// child per broker holding the topic.
	BrokerTopicsPath = "/brokers/topics"
)

// BrokerPath is /brokers/ids/<id>: ephemeral, value "creatorId:host:port".
func BrokerPath(id wire.BrokerID) string {
	return BrokerIDsPath + "/" + strconv.FormatInt(int64(id), 10)
}

// BrokerAdminPath is the parent of the brokers' admin endpoints.
//
// An extension: Kafka 0.7 has no such node, and its clients, which read
// only /brokers/ids and /brokers/topics, ignore it.
const BrokerAdminPath = "/brokers/admin"

// BrokerAdminEndpointPath is /brokers/admin/<id>: ephemeral, value the
// host:port of the broker's HTTP listener (metrics.listen), where kafka-ui
// finds its segment details.
func BrokerAdminEndpointPath(id wire.BrokerID) string {
	return BrokerAdminPath + "/" + strconv.FormatInt(int64(id), 10)
}

// InterBrokerPath is the parent of the brokers' inter-broker endpoints.
//
// An extension: Kafka 0.7 has none, and its clients, which read only
// /brokers/ids and /brokers/topics, ignore it (Kafka 0.9+ keeps every
// listener in the JSON value of /brokers/ids/<id>, which 0.7 clients could
// not parse).
const InterBrokerPath = "/brokers/interbroker"

// InterBrokerEndpointPath is /brokers/interbroker/<id>: persistent, value
// the host:port of the broker's inter-broker listener (replica.port),
// where the controller sends its orders and followers fetch. The broker
// writes it before /brokers/ids/<id> in every session, so a broker the
// controller sees registered has its endpoint written.
func InterBrokerEndpointPath(id wire.BrokerID) string {
	return InterBrokerPath + "/" + strconv.FormatInt(int64(id), 10)
}

// LogEndsPath is the parent of the brokers' log ends.
//
// An extension: Kafka 0.7 and 0.8 have none (KIP-966 carries the same news,
// an unclean shutdown, in KRaft's broker registration); 0.7 clients ignore
// it.
const LogEndsPath = "/brokers/logends"

// BrokerLogEndsPath is /brokers/logends/<id>: persistent, value the JSON
// of the broker's replicated logs when it registered (MarshalLogEnds),
// which ones it recovered after a crash and where each ends. The broker
// writes it before /brokers/ids/<id> in every session, so a broker the
// controller sees registered has it written for that registration.
func BrokerLogEndsPath(id wire.BrokerID) string {
	return LogEndsPath + "/" + strconv.FormatInt(int64(id), 10)
}

// TopicPath is /brokers/topics/<topic>: persistent, one child per broker.
func TopicPath(topic string) string { return BrokerTopicsPath + "/" + topic }

// TopicBrokerPath is /brokers/topics/<topic>/<id>: ephemeral, value the
// number of partitions the broker holds for the topic, in decimal.
func TopicBrokerPath(topic string, id wire.BrokerID) string {
	return TopicPath(topic) + "/" + strconv.FormatInt(int64(id), 10)
}

// GroupPath is /consumers/<group>.
func GroupPath(group string) string { return ConsumersPath + "/" + group }

// GroupIDsPath is /consumers/<group>/ids: one ephemeral child per consumer.
func GroupIDsPath(group string) string { return GroupPath(group) + "/ids" }

// ConsumerPath is /consumers/<group>/ids/<consumerId>: ephemeral, value the
// consumer's subscription (JSON {"<topic>": <streams>} or a 0.7 wildcard).
func ConsumerPath(group, consumerID string) string {
	return GroupIDsPath(group) + "/" + consumerID
}

// OwnersGroupPath is /consumers/<group>/owners: one child per topic.
func OwnersGroupPath(group string) string { return GroupPath(group) + "/owners" }

// OwnersPath is /consumers/<group>/owners/<topic>.
func OwnersPath(group, topic string) string {
	return OwnersGroupPath(group) + "/" + topic
}

// OwnerPath is /consumers/<group>/owners/<topic>/<brokerId>-<partition>
// (or .../<partition> for a replicated topic, see PartitionNodeName):
// ephemeral, value the owning consumer thread id "<consumerId>-<n>".
func OwnerPath(group, topic string, p wire.BrokerPartition) string {
	return OwnersPath(group, topic) + "/" + PartitionNodeName(p)
}

// OffsetsGroupPath is /consumers/<group>/offsets: one child per topic.
func OffsetsGroupPath(group string) string { return GroupPath(group) + "/offsets" }

// OffsetsPath is /consumers/<group>/offsets/<topic>.
func OffsetsPath(group, topic string) string { return OffsetsGroupPath(group) + "/" + topic }

// OffsetPath is /consumers/<group>/offsets/<topic>/<brokerId>-<partition>
// (or .../<partition> for a replicated topic, see PartitionNodeName):
// persistent, value the offset of the next message to consume, in decimal.
func OffsetPath(group, topic string, p wire.BrokerPartition) string {
	return OffsetsPath(group, topic) + "/" + PartitionNodeName(p)
}

// ValidateName checks that a topic, group or consumer id can be one
// component of a ZooKeeper path.
func ValidateName(kind, name string) error {
	if err := validateNodeName(name); err != nil {
		return fmt.Errorf("zkcoord: invalid %s: %w", kind, err)
	}
	return nil
}
