// Package log is the broker's storage: for each partition an append-only
// log of segment files, byte for byte as Kafka 0.7 lays it out.
//
// Paper §3.1 ("Simple storage"): "Each partition of a topic corresponds to a
// logical log. Physically, a log is implemented as a set of segment files of
// approximately the same size (e.g., 1GB). Every time a producer publishes a
// message to a partition, the broker simply appends the message to the last
// segment file."
//
// # On disk
//
//	<log.dir>/
//	    .lock                                flock'ed by the open Manager: pid=… host=…
//	    <topic>-<partition>/                 e.g. "pageviews-0"
//	        00000000000000000000.kafka       first segment, starts at offset 0
//	        00000000000536870912.kafka       next segment, starts at 536870912
//	        .kafka_cleanshutdown             after a clean Close: the log end it vouches for
//
// A segment file holds nothing but messages laid end to end, exactly as the
// producer sent them and as the consumer receives them (see broker/wire):
//
//	+-------------------------+-------------------------+- - -
//	| size | magic | crc | payload | size | magic | ...
//	+-------------------------+-------------------------+- - -
//	^ offset = name of file    ^ offset + 4 + size
//
// An offset is a byte position in the partition: a segment's file name is the
// offset of its first byte, and segment i+1 starts where segment i ends. There
// is no index. The Log keeps an in-memory table of segment start offsets and
// binary-searches it; an uncompressed message costs exactly 9 bytes more than
// its payload (100,000 messages of 200 bytes take 20,900,000 bytes).
//
// # Visibility and durability
//
// Append writes a whole message set with one write to the page cache.
// Paper §3.1: "a message is only exposed to the consumers after it is
// flushed": a flush (fsync) happens after log.flush.interval messages (run
// by the log's flusher goroutine, so the appender does not wait for the
// disk) or when the topic's flush interval has passed (Manager.Run), and
// only then do readers see the new bytes (EndOffset moves). Readers never
// take the writer's lock: they load an immutable snapshot of the segment
// table.
//
// # Reading
//
// Read returns a Region of one segment file for sendfile, clipped to the
// flushed end; it may end mid-message (the client keeps the complete
// messages and fetches again from the next offset). There is no index:
// an offset inside a segment is checked by reading the message that should
// start there (its size, header and CRC), and one that is not a message
// boundary is refused with ErrNotBoundary (InvalidMessage on the wire),
// where Kafka 0.7 sends bytes from the middle of a message.
//
// # Disk errors
//
// Open refuses a log.dir it cannot write (ErrNotWritable) or that another
// broker holds (ErrLocked: an flock on log.dir/.lock, naming the holder).
// An append that finds the disk full (ENOSPC, EDQUOT) takes its partial
// write back and fails with ErrNoSpace; the log stays writable and takes
// appends again once space is freed. Any other failed write or fsync is
// sticky (ErrFailed) until the log is reopened.
//
// # Recovery
//
// Open checks that the segments are contiguous (else it refuses, naming the
// files) and, if the clean-shutdown marker is missing, scans the last segment
// and truncates it at the first message that is short or fails its CRC
// (max.message.size does not apply: a message valid under the format is
// never dropped because of today's configuration). The marker records the
// log end it vouches for; if the last segment does not end there, the log
// is recovered anyway.
//
// # Retention
//
// Paper §3.1: the broker deletes whole segments older than the retention
// period (log.retention.hours, and optionally beyond log.retention.size),
// never single messages and never because they were consumed. Segment files
// are reference counted, so deleting one that a fetch is still sending is
// safe: it is unlinked at once and closed when its last Region is released.
// A log the replication layer manages is bounded by it (BoundRetention):
// only segments wholly below its high watermark go, as in Kafka since 0.8.
package log
