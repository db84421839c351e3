// Package audit is the byte format of Kafka's audit at LinkedIn (paper §4):
// every audited message carries, in an envelope around its payload, the
// time it was created and the host that made it; every producer publishes,
// for each topic and fixed time window, a monitoring event with the number
// of messages it sent in that window, to a separate audit topic; consumers
// count what they receive and validate it against those events. The
// producer side is producer/audit, the counting side consumer/audit and the
// tool consumer/cmd/kafka-audit. This package is the leaf both import (the
// consumer must not import the producer), beside broker/wire.
//
// Deviation: the paper does not give the envelope's or the event's layout
// (LinkedIn's were Avro records with a schema id); these are ours. Two
// fields go beyond the paper: a per-producer session id and a per-topic
// sequence number in every envelope, with the first sequence number of a
// window in its event, so that a consumer can tell a duplicate from a new
// message and count missing and duplicate messages exactly instead of only
// comparing totals (a loss and a duplicate in one window would cancel).
//
// # Envelope
//
// An audited message's payload is the envelope followed by the original
// payload, unchanged. All integers are big-endian. When the audit is off,
// payloads are sent as they are and carry none of this.
//
//	offset  size  field
//	0       2     magic 0xA7 0x1D ("audit"); Decode rejects anything else
//	2       1     version, 1
//	3       8     creation time, Unix nanoseconds (int64)
//	11      8     session: a random id of the producer instance (uint64)
//	19      8     sequence number of the message in its session and topic,
//	              0, 1, 2, ... (uint64)
//	27      1     host length H (1..255)
//	28      H     host: the name of the server that created the message (UTF-8)
//	28+H    ...   the original payload
//
// The envelope costs 28 + H bytes per message (46 for an 18-byte host name).
//
// # Monitoring event
//
// A monitoring event is the whole payload of one message on the audit topic
// (by default "kafka-audit", AuditTopic).
//
//	offset  size  field
//	0       2     magic 0xA7 0x1E
//	2       1     version, 1
//	3       8     window start, Unix nanoseconds (int64), a multiple of the
//	              window length
//	11      8     window length, nanoseconds (int64, > 0)
//	19      8     count: messages of the topic created in the window (uint64,
//	              at most 2^63-1, so that sums of counts fit an int64)
//	27      8     first sequence number of those messages (uint64); they are
//	              first, first+1, ..., first+count-1 (first+count <= 2^64)
//	35      8     session (uint64), as in the envelopes
//	43      1     host length H (1..255)
//	44      H     host
//	44+H    1     topic length T (1..249, wire.MaxTopicLen)
//	45+H    T     topic
//
// A message belongs to the window that contains its creation time, so a
// consumer assigns a received envelope to its window without the event.
package audit
