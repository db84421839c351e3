package server

import (
	"os"

	"github.com/netdb11/kafka/broker/wire"
)

// Extension lets a layer above the 2011 broker -- the replication layer,
// broker/replica -- serve request types Kafka 0.7 does not have and bound
// what 0.7's requests do to the partitions it manages. A Server without one
// (Config.Extension nil) is exactly the 2011 broker.
type Extension interface {
	// Handles reports whether the extension serves request type t.
	Handles(t wire.RequestType) bool
	// Serve answers one request of a type it handles. frame is the type
	// and body, valid only during the call; the whole response goes out
	// through w. An error closes the connection.
	Serve(frame []byte, w *ResponseWriter) error
	// ProduceAllowed is asked before a PRODUCE or MULTIPRODUCE appends to
	// a partition (creating it if need be); an error refuses the request
	// (0.7's produce has no response: the connection is closed).
	ProduceAllowed(topic string, partition wire.Partition) error
	// Produced reports that a PRODUCE or MULTIPRODUCE appended to a
	// partition.
	Produced(topic string, partition wire.Partition)
	// FetchLimit bounds what FETCH and MULTIFETCH return of a partition
	// (the high watermark of a replicated partition); ok false leaves it
	// unbounded.
	FetchLimit(topic string, partition wire.Partition) (limit wire.Offset, ok bool)
	// OffsetsLimit is asked before an OFFSETS request about a partition is
	// answered: an error refuses it (a replica that does not lead a
	// replicated partition: NotLeaderForPartition), and ok true bounds the
	// answer at limit (the high watermark): offsets above it are replaced
	// by limit, as 0.8's handleOffsetRequest does for ordinary clients.
	OffsetsLimit(topic string, partition wire.Partition) (limit wire.Offset, ok bool, err error)
}

// ResponseWriter writes an extension's response on its connection: bytes
// built in memory, and file regions sent with sendfile (as fetches are).
type ResponseWriter struct {
	out  *responder
	obs  Observer // nil: no metrics
	peer Peer
}

// Write queues p (headers and small bodies) to go out before the next
// region or at Flush.
func (w *ResponseWriter) Write(p []byte) { w.out.hdr = append(w.out.hdr, p...) }

// Region sends the queued bytes and then n bytes of f from position pos,
// with sendfile unless fetch.use.sendfile is off.
func (w *ResponseWriter) Region(f *os.File, pos, n int64) error { return w.out.region(f, pos, n) }

// Flush sends the queued bytes.
func (w *ResponseWriter) Flush() error { return w.out.flush() }

// Produced reports to the server's Observer (the broker's metrics) the
// parts of a PRODUCE_ACKS the extension appended for its client: those
// whose result has an offset (results[i] answers parts[i]). So a replicated
// produce counts in messages and bytes in as a 0.7 PRODUCE does; what a
// follower copies from its leader is not a client's produce and is not
// reported.
func (w *ResponseWriter) Produced(parts []wire.ProduceRequest, results []wire.ProduceResult) {
	if w.obs == nil {
		return
	}
	for i := range min(len(parts), len(results)) {
		if set := parts[i].Messages; results[i].Offset >= 0 && len(set) > 0 {
			w.obs.Produced(results[i].Topic, results[i].Partition, wire.Count(set), len(set))
		}
	}
}
