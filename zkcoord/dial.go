package zkcoord

import (
	"fmt"
	"log/slog"
	"net"
	"time"
)

// handshakeCapped wraps dial (nil: net.DialTimeout) so that no deadline the
// client library sets on a connection lies more than the session timeout
// ahead. The library gives the session handshake (ConnectRequest and its
// answer) 10 × two thirds of the session timeout, 20 s for a 3 s session; its
// other deadlines are two thirds of it and pass unchanged. A server that
// accepts the connection and never answers (one restarting, as in the fault
// suite's zk-stop) held a broker's reconnection that long, while the server
// had expired the session and another broker led its partitions: the broker
// went on acting as leader for 17.7 s (paper/faults.md, "Found"). With the cap
// it gives up on that server after the session timeout and tries again, as the
// Java client does (its connect timeout is the session timeout divided among
// the servers), and learns of the expiry from the next one that answers.
func handshakeCapped(dial func(string, string, time.Duration) (net.Conn, error), limit time.Duration) func(string, string, time.Duration) (net.Conn, error) {
	if dial == nil {
		dial = net.DialTimeout
	}
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		conn, err := dial(network, address, timeout)
		if err != nil {
			return nil, err
		}
		var capped net.Conn = cappedConn{Conn: conn, limit: limit}
		if raceEnabled {
			capped = gate(capped) // libloop.go: the library's zxid race
		}
		return capped, nil
	}
}

// cappedConn is a connection whose deadlines lie at most limit ahead.
type cappedConn struct {
	net.Conn
	limit time.Duration
}

func (c cappedConn) clamp(t time.Time) time.Time {
	if lim := time.Now().Add(c.limit); !t.IsZero() && t.After(lim) {
		return lim
	}
	return t
}

// SetDeadline sets both deadlines, at most the limit ahead.
func (c cappedConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.clamp(t)) }

// SetReadDeadline sets the read deadline, at most the limit ahead.
func (c cappedConn) SetReadDeadline(t time.Time) error { return c.Conn.SetReadDeadline(c.clamp(t)) }

// SetWriteDeadline sets the write deadline, at most the limit ahead.
func (c cappedConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.clamp(t)) }

// zkLogger routes the client library's messages to slog at debug level;
// Conn logs session changes itself.
type zkLogger struct{ log *slog.Logger }

// Printf logs one message of the client library.
func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("zookeeper client: " + fmt.Sprintf(format, args...))
}
