package server

import (
	"math"
	"time"

	"github.com/netdb11/kafka/broker/props"
)

// requestTypeLen is the width of a request's type, the least a frame holds.
const requestTypeLen = 2

// Keys binds the server's server.properties keys to Config's fields, with
// their bounds: Config.Validate checks them, and the broker's own table
// takes them in (broker.Config.Server).
var Keys = props.NewTable("server",
	props.Int("max.socket.request.bytes", requestTypeLen, math.MaxInt32, "", func(c *Config) *int32 { return &c.MaxRequestSize }).
		Doc("bytes", "largest request frame accepted; a larger size prefix closes the connection"),
	props.Int("socket.send.buffer", 0, math.MaxInt32, "0: the system's default", func(c *Config) *int { return &c.SendBuffer }).
		Doc("bytes", "SO_SNDBUF of client connections (0, an extension: the system's default with autotuning)"),
	props.Int("socket.receive.buffer", 0, math.MaxInt32, "0: the system's default", func(c *Config) *int { return &c.ReceiveBuffer }).
		Doc("bytes", "SO_RCVBUF of the listening socket and client connections (0, an extension: the system's default)"),
	props.Bool("fetch.use.sendfile", func(c *Config) *bool { return &c.UseSendfile }).
		Doc("bool", "extension, for the sendfile ablation only: false copies fetched bytes through user space"),
	props.Millis("connections.max.idle.ms", 0, math.MaxInt64, "0: never", func(c *Config) *time.Duration { return &c.MaxIdle }).
		Doc("ms", "close a connection that sends no request for this long, or whose request is not complete this long after its size prefix (Kafka's key; 0, an extension: never)"),
	props.Int("queued.max.request.bytes", -1, math.MaxInt, "-1 or 0: no cap", func(c *Config) *int64 { return &c.MaxQueuedRequestBytes }).
		Doc("bytes", "cap on the bytes held by requests being read and handled, broker-wide, beyond each connection's first 8 KiB; at least max.socket.request.bytes (Kafka's key; -1: no cap)"),
)

// DefaultMaxQueuedRequestBytes is queued.max.request.bytes by default:
// 256 MiB, room for two requests of the largest size 0.7 allows (100 MiB)
// and thousands of ordinary ones at once, while twenty clients that each
// send part of a 100 MiB frame can no longer make the broker hold 664 MB.
//
// Deviation: Kafka's default is -1, no cap; Kafka 0.7 had no such key.
const DefaultMaxQueuedRequestBytes = 256 << 20

// DefaultConfig returns Kafka 0.7's defaults (max.socket.request.bytes
// 100 MiB, socket buffers 100 KiB, sendfile on), Kafka's
// connections.max.idle.ms (10 minutes), queued.max.request.bytes
// DefaultMaxQueuedRequestBytes and a 10 s shutdown timeout; Logs is nil.
//
// Deviation: Kafka 0.7 never closed an idle connection; Kafka since 0.9
// does after connections.max.idle.ms.
func DefaultConfig() Config {
	return Config{
		MaxRequestSize:        100 * 1024 * 1024,
		SendBuffer:            100 * 1024,
		ReceiveBuffer:         100 * 1024,
		UseSendfile:           true,
		ShutdownTimeout:       10 * time.Second,
		MaxIdle:               10 * time.Minute,
		MaxQueuedRequestBytes: DefaultMaxQueuedRequestBytes,
	}
}
