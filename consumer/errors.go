package consumer

import (
	"errors"
	"fmt"

	"github.com/netdb11/kafka/broker/wire"
)

// Errors of the consumer. Broker errors wrap the wire package's errors
// (wire.ErrOffsetOutOfRange, ...) and corrupt messages wire.ErrInvalidMessage:
// use errors.Is.
var (
	// ErrClosed is returned by requests after Close.
	ErrClosed = errors.New("consumer: closed")
	// ErrProtocol means the broker's response does not follow the protocol
	// (a size out of bounds, a wrong number of parts); the connection is
	// closed.
	ErrProtocol = errors.New("consumer: malformed response")
	// ErrMessageTooLarge is wrapped by *MessageTooLargeError.
	ErrMessageTooLarge = errors.New("consumer: message larger than the fetch size")
	// ErrNotBoundary matches (errors.Is) the *BrokerError of a fetch at an
	// offset where no message starts (inside a message): the broker answers
	// InvalidMessage. Offsets to fetch from come from a message's
	// NextOffset, an OFFSETS answer or a committed offset.
	ErrNotBoundary = errors.New("consumer: offset is not a message boundary")
)

// BrokerError is an error code a broker answered for a partition.
type BrokerError struct {
	// Topic and Partition name the partition that was asked for.
	Topic     string
	Partition wire.Partition
	// Offset is the offset that was requested (for OFFSETS, the time).
	Offset wire.Offset
	// Code is what the broker answered.
	Code wire.ErrorCode
}

// Error names the partition, the offset and the code.
func (e *BrokerError) Error() string {
	if e.Code == wire.CodeInvalidMessage {
		return fmt.Sprintf("consumer: %s-%d: offset %d is not a message boundary (the broker answered %v: no message starts there, or the log is damaged there)",
			e.Topic, e.Partition, e.Offset, e.Code)
	}
	return fmt.Sprintf("consumer: %s-%d at offset %d: broker answered %v: %v", e.Topic, e.Partition, e.Offset, e.Code, e.Code.Err())
}

// Unwrap returns the wire error of the code, e.g. wire.ErrOffsetOutOfRange.
func (e *BrokerError) Unwrap() error { return e.Code.Err() }

// Is matches ErrNotBoundary for an InvalidMessage answer, which a broker
// gives a fetch at an offset inside a message.
func (e *BrokerError) Is(target error) bool {
	return target == ErrNotBoundary && e.Code == wire.CodeInvalidMessage
}

// MessageTooLargeError means the first message at a fetch offset does not
// fit in the fetch size, so the consumer can never get past it with that
// size (0.7's InvalidMessageSizeException). It wraps ErrMessageTooLarge.
type MessageTooLargeError struct {
	// Topic and Partition name the partition.
	Topic     string
	Partition wire.Partition
	// Offset is where the message starts.
	Offset wire.Offset
	// Size is the message's length, size prefix included.
	Size int
	// FetchSize is the fetch size that was too small.
	FetchSize int
}

// Error says which message does not fit, as "message at offset X is N
// bytes, larger than the fetch size M".
func (e *MessageTooLargeError) Error() string {
	return fmt.Sprintf("consumer: %s-%d: message at offset %d is %d bytes, larger than the fetch size %d",
		e.Topic, e.Partition, e.Offset, e.Size, e.FetchSize)
}

// Unwrap makes errors.Is(err, ErrMessageTooLarge) true.
func (e *MessageTooLargeError) Unwrap() error { return ErrMessageTooLarge }
