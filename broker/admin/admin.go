// Package admin defines the JSON documents of a broker's read-only admin
// endpoint (served by broker/metrics on metrics.listen): a partition's log as
// an operator sees it, its segment files named by byte offset (paper §3.1) and
// the offsets that bound what consumers read. broker/log fills them; clients
// such as kafka-ui decode them without importing the broker's internals.
package admin

import (
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// Info describes a partition's log as an operator sees it: its segment files
// and the offsets that bound what consumers read. The broker's admin
// endpoint serves it and kafka-ui draws it.
type Info struct {
	// Topic and Partition name the log.
	Topic     string         `json:"topic"`
	Partition wire.Partition `json:"partition"`
	// StartOffset is the first offset (the oldest segment's start).
	StartOffset wire.Offset `json:"start_offset"`
	// FlushedOffset is the flushed end (EndOffset): consumers read
	// [StartOffset, FlushedOffset). Paper §3.1: a message is exposed to
	// consumers only after it is flushed.
	FlushedOffset wire.Offset `json:"flushed_offset"`
	// EndOffset is the written end (WrittenEnd): the offset the next
	// appended message gets. The bytes [FlushedOffset, EndOffset) are
	// written but not yet flushed.
	EndOffset wire.Offset `json:"end_offset"`
	// Retention is the topic's retention time (log.retention.hours or its
	// topic override) and RetentionSize log.retention.size (-1: none).
	Retention     time.Duration `json:"retention_ns"`
	RetentionSize int64         `json:"retention_size"`
	// Segments are the segment files, oldest first; the last is active.
	Segments []SegmentInfo `json:"segments"`
	// Failed, when not empty, is why the log refuses writes until the
	// broker restarts: a write or fsync failed other than for want of
	// space (ErrFailed). Reads go on.
	Failed string `json:"failed,omitempty"`
}

// SegmentInfo describes one segment file.
type SegmentInfo struct {
	// Name is the file name: the start offset in 20 digits, ".kafka".
	Name string `json:"name"`
	// Start is the offset of its first byte; Size its length in bytes.
	Start wire.Offset `json:"start"`
	Size  int64       `json:"size"`
	// ModTime is the file's modification time, which retention goes by
	// (zero if the file could not be looked at: deleted meanwhile).
	ModTime time.Time `json:"mtime"`
	// Active is true for the last segment, the one appended to.
	Active bool `json:"active"`
	// ExpiresAt is ModTime plus the retention time.
	ExpiresAt time.Time `json:"expires_at"`
	// Expiring is true when the next retention run (DeleteOldSegments) at
	// the time Info was taken deletes the segment, by age or by size.
	Expiring bool `json:"expiring"`
}

// Partitions is the answer of GET /admin/partitions: the broker and a
// summary of each partition it holds.
type Partitions struct {
	BrokerID   wire.BrokerID `json:"broker_id"`
	Partitions []Summary     `json:"partitions"`
}

// Partition is the answer of GET /admin/partitions/{topic}/{partition}: the
// log's segments and offsets and, for a partition the replication layer
// manages, its replication state.
type Partition struct {
	Info
	Replication *Replication `json:"replication,omitempty"`
}

// Replication is the replication state of one partition on one broker
// (broker/replica fills it: Manager.ReplicaInfo), as the admin endpoint
// serves it and kafka-ui and the fault suite read it.
type Replication struct {
	// Role is "leader" or "follower" ("" before the controller spoke).
	Role string `json:"role"`
	// Leader and LeaderEpoch are the current leader as this broker knows it.
	Leader      wire.BrokerID `json:"leader"`
	LeaderEpoch int32         `json:"leader_epoch"`
	// Replicas is the assignment.
	Replicas []wire.BrokerID `json:"replicas"`
	// HighWatermark is what consumers of this replica see up to; LogEnd its
	// log end offset (written, flushed or not).
	HighWatermark wire.Offset `json:"high_watermark"`
	LogEnd        wire.Offset `json:"log_end"`
	// ISR and Followers are the leader's view (leader only): the in-sync
	// replicas, and each follower's log end offset (-1 before its first
	// fetch) and lag behind the leader's.
	ISR       []wire.BrokerID `json:"isr,omitempty"`
	Followers []Follower      `json:"followers,omitempty"`
}

// Follower is one follower as its leader sees it.
type Follower struct {
	ID     wire.BrokerID `json:"id"`
	LogEnd wire.Offset   `json:"log_end"`
	Lag    int64         `json:"lag"`
}

// Summary is one partition in Partitions: its offsets and the count and
// total size of its segments.
type Summary struct {
	Topic         string         `json:"topic"`
	Partition     wire.Partition `json:"partition"`
	StartOffset   wire.Offset    `json:"start_offset"`
	FlushedOffset wire.Offset    `json:"flushed_offset"`
	EndOffset     wire.Offset    `json:"end_offset"`
	Segments      int            `json:"segments"`
	Bytes         int64          `json:"bytes"`
	// Failed is Info's Failed: why the partition refuses writes.
	Failed string `json:"failed,omitempty"`
}
