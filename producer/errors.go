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
	// ErrMessageTooLarge means a message's payload, or a compressed set's,
	// exceeds max.message.size; nothing of that request was sent.
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
)

// AsyncError reports a batch that an async producer failed to send. Its
// messages are lost (0.7's default of zero retries). It is given to
// Config.ErrorHandler and may be returned by Close.
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
