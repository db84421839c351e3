package wire

import (
	"errors"
	"fmt"
)

// ErrorCode is the int16 error code of a response, as Kafka 0.7's ErrorMapping.
type ErrorCode int16

// The error codes of Kafka 0.7.
const (
	CodeUnknown          ErrorCode = -1
	CodeNone             ErrorCode = 0
	CodeOffsetOutOfRange ErrorCode = 1
	CodeInvalidMessage   ErrorCode = 2
	CodeWrongPartition   ErrorCode = 3
	CodeInvalidFetchSize ErrorCode = 4
)

// The errors that have a wire code. Errors from this module wrap one of them
// (use errors.Is) when they are to be reported to a client with that code.
var (
	// ErrUnknown is an unexpected failure on the broker (code -1).
	ErrUnknown = errors.New("kafka: unknown broker error")
	// ErrOffsetOutOfRange means the requested offset is not in the log (code 1).
	ErrOffsetOutOfRange = errors.New("kafka: offset out of range")
	// ErrInvalidMessage means a message is malformed or fails its CRC (code 2).
	ErrInvalidMessage = errors.New("kafka: invalid message")
	// ErrWrongPartition means the partition does not exist on this broker (code 3).
	ErrWrongPartition = errors.New("kafka: wrong partition")
	// ErrInvalidFetchSize means a fetch asked for a negative or too large size (code 4).
	ErrInvalidFetchSize = errors.New("kafka: invalid fetch size")
)

// errorTable is the one mapping between errors and wire codes.
var errorTable = []struct {
	code ErrorCode
	err  error
}{
	{CodeOffsetOutOfRange, ErrOffsetOutOfRange},
	{CodeInvalidMessage, ErrInvalidMessage},
	{CodeWrongPartition, ErrWrongPartition},
	{CodeInvalidFetchSize, ErrInvalidFetchSize},
	{CodeUnknown, ErrUnknown},
}

// CodeOf returns the wire code for err: CodeNone for nil, the code of the
// first table error err wraps, and CodeUnknown for anything else.
func CodeOf(err error) ErrorCode {
	if err == nil {
		return CodeNone
	}
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	return CodeUnknown
}

// Err returns the error for a wire code: nil for CodeNone, and for a code
// outside the table an error wrapping ErrUnknown that names the code.
func (c ErrorCode) Err() error {
	if c == CodeNone {
		return nil
	}
	for _, e := range errorTable {
		if e.code == c {
			return e.err
		}
	}
	return fmt.Errorf("%w (code %d)", ErrUnknown, int16(c))
}

// String names the code.
func (c ErrorCode) String() string {
	switch c {
	case CodeNone:
		return "NoError"
	case CodeUnknown:
		return "Unknown"
	case CodeOffsetOutOfRange:
		return "OffsetOutOfRange"
	case CodeInvalidMessage:
		return "InvalidMessage"
	case CodeWrongPartition:
		return "WrongPartition"
	case CodeInvalidFetchSize:
		return "InvalidFetchSize"
	}
	return fmt.Sprintf("ErrorCode(%d)", int16(c))
}

// CorruptError reports a malformed message at a byte position of a message
// set. It wraps ErrInvalidMessage.
type CorruptError struct {
	// Pos is the offset of the bad message (the set's base plus its position).
	Pos Offset
	// Reason says what is wrong, e.g. "crc mismatch".
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("kafka: invalid message at offset %d: %s", e.Pos, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidMessage) true.
func (e *CorruptError) Unwrap() error { return ErrInvalidMessage }
