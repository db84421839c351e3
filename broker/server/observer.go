package server

import (
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// Observer is told what the server does, for metrics (broker/metrics
// implements it). A Server without one (Config.Observer nil) pays one nil
// check per event and reads no clock.
//
// The methods are called on the connections' goroutines, concurrently, on
// the request path: they must be cheap and must not block.
type Observer interface {
	// ConnOpened and ConnClosed report an accepted connection and its end.
	ConnOpened()
	ConnClosed()
	// Request reports a handled request frame of type t (the types of the
	// Extension included) that took took to decode, run and answer; err
	// is what closed the connection, if anything. n is how many requests
	// the frame stood for: a PRODUCE handled together with the PRODUCE
	// requests pipelined behind it counts them all.
	Request(t wire.RequestType, n int, took time.Duration, err error)
	// Produced reports messages appended to a partition by PRODUCE or
	// MULTIPRODUCE, or by an Extension's request (ResponseWriter.Produced):
	// how many and their bytes.
	Produced(topic string, partition wire.Partition, messages, bytes int)
	// Fetched reports bytes of a partition sent in answer to a FETCH or
	// MULTIFETCH (0.7's BytesOut; the messages are not counted, as the
	// bytes leave by sendfile without being looked at).
	Fetched(topic string, partition wire.Partition, bytes int64)
}
