package producer

import (
	"errors"
	"fmt"

	"github.com/netdb11/kafka/broker/wire"
)

// Errors returned by the producer. Use errors.Is: most are wrapped with
// details.
var (
	// ErrClosed is returned by Send after Close.
	ErrClosed = errors.New("producer: closed")
	// ErrQueueFull means an async Send found the queue of a broker full
	// (queue.size messages waiting) and gave up after
	// queue.enqueueTimeout.ms; 0.7's QueueFullException. The messages before
	// the one that did not fit are queued, the rest are not.
	ErrQueueFull = errors.New("producer: queue full")
	// ErrMessageTooLarge means a message's size field (header and payload),
	// or a compressed set's, exceeds max.message.size, the broker's rule
	// (wire.OverMaxSize); nothing of that request was sent.
	ErrMessageTooLarge = errors.New("producer: message larger than max.message.size")
	// ErrNoBrokers means the Cluster knows no partition for the topic.
	ErrNoBrokers = errors.New("producer: no broker partitions for topic")
	// ErrInvalidPartition means the Partitioner returned an index outside
	// [0, numPartitions); 0.7's InvalidPartitionException.
	ErrInvalidPartition = errors.New("producer: partitioner returned an invalid partition")
	// ErrUnknownBroker means the Cluster listed a broker it has no address
	// for.
	ErrUnknownBroker = errors.New("producer: unknown broker")
	// ErrInvalidTopic means the topic name breaks Kafka's rule (1 to 255 of
	// [a-zA-Z0-9._-], not "." or ".."), which the broker enforces by closing
	// the connection.
	ErrInvalidTopic = errors.New("producer: invalid topic name")
	// ErrNotConfirmed is wrapped by the error of a send the broker did not
	// confirm: the connection closed (or failed) before the answer to the
	// round trip that ends the send came back. The broker closes a connection
	// after a produce request it refuses or cannot append (topic, partition,
	// message size, disk), and says why in its log.
	ErrNotConfirmed = errors.New("producer: send not confirmed")
)

// AsyncError reports a batch that an async producer failed to send. Its
// messages are lost (0.7's default of zero retries). It is given to
// Config.ErrorHandler, and counted in Stats and Close's *LossError.
type AsyncError struct {
	// Broker is the id of the broker the batch was for.
	Broker wire.BrokerID
	// Addr is the broker's address.
	Addr string
	// Messages is the number of messages lost.
	Messages int
	// Err is the cause.
	Err error
}

// Error describes the lost batch and its cause.
func (e *AsyncError) Error() string {
	return fmt.Sprintf("producer: async send of %d messages to broker %d (%s): %v", e.Messages, e.Broker, e.Addr, e.Err)
}

// Unwrap returns the cause.
func (e *AsyncError) Unwrap() error { return e.Err }

// LossError is what Close returns when messages Send accepted were not
// delivered, or not known to be: it counts them, and names the first cause.
type LossError struct {
	// NotDelivered of Accepted messages were not delivered.
	NotDelivered, Accepted int64
	// First is the first cause (an *AsyncError, or an error wrapping
	// ErrNotConfirmed).
	First error
}

// Error is "producer: N of M messages not delivered (first cause: ...)".
func (e *LossError) Error() string {
	return fmt.Sprintf("producer: %d of %d messages not delivered (first cause: %v)", e.NotDelivered, e.Accepted, e.First)
}

// Unwrap returns the first cause.
func (e *LossError) Unwrap() error { return e.First }

// ProduceError reports messages to a partition of a replicated topic that
// were not acknowledged at request.required.acks: the leader refused them
// (Err wraps the wire error: wire.ErrNotEnoughReplicas,
// wire.ErrNotEnoughReplicasAfterAppend, wire.ErrRequestTimedOut,
// wire.ErrNotLeaderForPartition, ...), or no leader could be reached before
// message.send.max.retries ran out. Use errors.Is on it.
type ProduceError struct {
	// Topic and Partition name the partition.
	Topic     string
	Partition wire.Partition
	// Broker is the leader the messages were last sent to (or the one the
	// metadata named), -1 when no partition had a leader.
	Broker wire.BrokerID
	// Addr is that broker's address ("" when unknown).
	Addr string
	// Messages is the number of messages not acknowledged.
	Messages int
	// Attempts is the number of sends tried (1 + retries).
	Attempts int
	// Err is the last cause.
	Err error
}

// Error names the broker, topic, partition, attempts and cause.
func (e *ProduceError) Error() string {
	if e.Addr == "" {
		return fmt.Sprintf("producer: %d messages to topic %s partition %d not acknowledged (leader %d unreachable or unknown) after %d attempts: %v",
			e.Messages, e.Topic, e.Partition, e.Broker, e.Attempts, e.Err)
	}
	return fmt.Sprintf("producer: %d messages to topic %s partition %d not acknowledged by broker %d (%s) after %d attempts: %v",
		e.Messages, e.Topic, e.Partition, e.Broker, e.Addr, e.Attempts, e.Err)
}

// Unwrap returns the cause.
func (e *ProduceError) Unwrap() error { return e.Err }
