package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"
)

// Config configures a SimpleConsumer. Each field names the Kafka 0.7
// consumer property it stands for. Start from DefaultConfig.
type Config struct {
	// SocketTimeout is socket.timeout.ms (default 30000): the longest one
	// request may take, connecting included; 0 means no limit.
	SocketTimeout time.Duration
	// BufferSize is socket.buffersize (default 0: the system's auto-tuned
	// receive buffer). Deviation: 0.7 sets 64 KiB, which caps the TCP window
	// and with it the speed of 1 MiB fetches; set it to 65536 to match.
	BufferSize int
	// FetchSize is fetch.size (default 1 MiB): the maxBytes of a Fetch
	// that passes 0. Deviation: 0.7's default is 300 KiB; a larger fetch
	// amortizes a request over more messages (the paper's consumer test
	// pulled about 200 KB at a time; the experiments set that explicitly).
	FetchSize int
	// Logger receives connection events. Nil discards them.
	Logger *slog.Logger
	// Dial, when set, opens the broker connection in place of a
	// net.Dialer (a fault harness dials from a testbed host's network
	// namespace). It must return a *net.TCPConn. Not a 0.7 property.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		SocketTimeout: 30000 * time.Millisecond,
		FetchSize:     1 << 20,
	}
}

// maxFetchSize bounds a fetch size: it must fit the int32 of the request.
const maxFetchSize = 1<<31 - 1 - 64

// Validate reports every bad field.
func (c *Config) Validate() error {
	var errs []error
	if c.SocketTimeout < 0 {
		errs = append(errs, fmt.Errorf("socket.timeout.ms=%v: must not be negative (0: no timeout)", c.SocketTimeout))
	}
	if c.BufferSize < 0 {
		errs = append(errs, fmt.Errorf("socket.buffersize=%d: must not be negative", c.BufferSize))
	}
	if c.FetchSize < 1 || c.FetchSize > maxFetchSize {
		errs = append(errs, fmt.Errorf("fetch.size=%d: must be in 1..%d", c.FetchSize, maxFetchSize))
	}
	return errors.Join(errs...)
}
