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

// The error codes of the replication layer, numbered as in later Kafka
// versions (0.8 and after) where Kafka has them.
const (
	CodeLeaderNotAvailable           ErrorCode = 5
	CodeNotLeaderForPartition        ErrorCode = 6
	CodeRequestTimedOut              ErrorCode = 7
	CodeReplicaNotAvailable          ErrorCode = 9
	CodeStaleControllerEpoch         ErrorCode = 11
	CodeNotEnoughReplicas            ErrorCode = 19
	CodeNotEnoughReplicasAfterAppend ErrorCode = 20
	CodeClusterAuthorizationFailed   ErrorCode = 31
	CodeNotController                ErrorCode = 41
	CodeInvalidRequest               ErrorCode = 42
	CodeFencedLeaderEpoch            ErrorCode = 74
	CodeUnknownLeaderEpoch           ErrorCode = 75
	// CodeNotMessageBoundary has no Kafka number.
	//
	// Deviation: Kafka's logical offsets cannot fall inside a message;
	// byte offsets can, and a leader refuses such a replica fetch with
	// this code (1000, far from Kafka's numbers).
	CodeNotMessageBoundary ErrorCode = 1000
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

	// ErrLeaderNotAvailable means the partition has no leader now, e.g.
	// during an election or with no ISR member alive (code 5).
	ErrLeaderNotAvailable = errors.New("kafka: leader not available")
	// ErrNotLeaderForPartition means this broker does not lead the
	// partition; the client refreshes its metadata (code 6).
	ErrNotLeaderForPartition = errors.New("kafka: not the leader for the partition")
	// ErrRequestTimedOut means the acknowledgement did not come within
	// request.timeout.ms; the messages may or may not be committed (code 7).
	ErrRequestTimedOut = errors.New("kafka: request timed out")
	// ErrReplicaNotAvailable means a replica the request names is not
	// known to this broker (code 9).
	ErrReplicaNotAvailable = errors.New("kafka: replica not available")
	// ErrStaleControllerEpoch means a controller request came from a
	// deposed controller (code 11).
	ErrStaleControllerEpoch = errors.New("kafka: stale controller epoch")
	// ErrNotEnoughReplicas means the ISR is smaller than
	// min.insync.replicas; nothing was appended (code 19).
	ErrNotEnoughReplicas = errors.New("kafka: not enough in-sync replicas")
	// ErrNotEnoughReplicasAfterAppend means the messages were appended but
	// the ISR shrank below min.insync.replicas before they were
	// acknowledged (code 20).
	ErrNotEnoughReplicasAfterAppend = errors.New("kafka: not enough in-sync replicas after append")
	// ErrClusterAuthorizationFailed means a cluster request (replica
	// fetch, leader epoch query, controller order) came where or from whom
	// the broker does not take one: on the client port rather than the
	// inter-broker listener, or from a certificate that is not the
	// broker's it claims to be (code 31, Kafka's
	// CLUSTER_AUTHORIZATION_FAILED).
	ErrClusterAuthorizationFailed = errors.New("kafka: cluster authorization failed")
	// ErrNotController means a controller's order (LEADER_AND_ISR,
	// STOP_REPLICA) came from a broker that is not the controller
	// registered at /controller, or with a controller epoch other than
	// /controller_epoch's (code 41).
	ErrNotController = errors.New("kafka: not the controller")
	// ErrInvalidRequest means a request contradicts the cluster's state in
	// ZooKeeper (a leader or ISR member outside the assignment, a leader
	// epoch ZooKeeper has not reached, a replica the assignment still
	// names to be deleted); nothing was changed (code 42).
	ErrInvalidRequest = errors.New("kafka: invalid request")
	// ErrFencedLeaderEpoch means the request carried an older leader epoch
	// than the broker's (code 74).
	ErrFencedLeaderEpoch = errors.New("kafka: fenced leader epoch")
	// ErrUnknownLeaderEpoch means the request carried a newer leader epoch
	// than the broker knows yet (code 75).
	ErrUnknownLeaderEpoch = errors.New("kafka: unknown leader epoch")
	// ErrNotMessageBoundary means a replica fetch asked for an offset that
	// does not start a message in the leader's log (code 1000).
	ErrNotMessageBoundary = errors.New("kafka: offset is not a message boundary")
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
	{CodeLeaderNotAvailable, ErrLeaderNotAvailable},
	{CodeNotLeaderForPartition, ErrNotLeaderForPartition},
	{CodeRequestTimedOut, ErrRequestTimedOut},
	{CodeReplicaNotAvailable, ErrReplicaNotAvailable},
	{CodeStaleControllerEpoch, ErrStaleControllerEpoch},
	{CodeNotEnoughReplicas, ErrNotEnoughReplicas},
	{CodeNotEnoughReplicasAfterAppend, ErrNotEnoughReplicasAfterAppend},
	{CodeClusterAuthorizationFailed, ErrClusterAuthorizationFailed},
	{CodeNotController, ErrNotController},
	{CodeInvalidRequest, ErrInvalidRequest},
	{CodeFencedLeaderEpoch, ErrFencedLeaderEpoch},
	{CodeUnknownLeaderEpoch, ErrUnknownLeaderEpoch},
	{CodeNotMessageBoundary, ErrNotMessageBoundary},
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
	case CodeLeaderNotAvailable:
		return "LeaderNotAvailable"
	case CodeNotLeaderForPartition:
		return "NotLeaderForPartition"
	case CodeRequestTimedOut:
		return "RequestTimedOut"
	case CodeReplicaNotAvailable:
		return "ReplicaNotAvailable"
	case CodeStaleControllerEpoch:
		return "StaleControllerEpoch"
	case CodeNotEnoughReplicas:
		return "NotEnoughReplicas"
	case CodeNotEnoughReplicasAfterAppend:
		return "NotEnoughReplicasAfterAppend"
	case CodeClusterAuthorizationFailed:
		return "ClusterAuthorizationFailed"
	case CodeFencedLeaderEpoch:
		return "FencedLeaderEpoch"
	case CodeUnknownLeaderEpoch:
		return "UnknownLeaderEpoch"
	case CodeNotMessageBoundary:
		return "NotMessageBoundary"
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
