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
)

// DefaultConfig returns Kafka 0.7's defaults (max.socket.request.bytes
// 100 MiB, socket buffers 100 KiB, sendfile on) and a 10 s shutdown
// timeout; Logs is nil.
func DefaultConfig() Config {
	return Config{
		MaxRequestSize:  100 * 1024 * 1024,
		SendBuffer:      100 * 1024,
		ReceiveBuffer:   100 * 1024,
		UseSendfile:     true,
		ShutdownTimeout: 10 * time.Second,
	}
}
