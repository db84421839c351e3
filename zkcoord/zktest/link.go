package zktest

import (
	"errors"
	"net"
	"sync"
	"time"
)

// ErrCut is returned by Link.Dial while the link is cut.
var ErrCut = errors.New("zktest: link cut")

// Link is a dialer for zkcoord.Config.Dial whose connections can be cut, so
// that a test can make the server really expire a client's session: Cut the
// link, wait until the session's ephemeral nodes disappear (watch them from
// another session), then Heal it; the client reconnects, learns that its
// session expired, and opens a new one.
type Link struct {
	mu    sync.Mutex
	cut   bool                  // guarded by mu
	conns map[net.Conn]struct{} // open connections; guarded by mu
}

// NewLink returns a healthy link.
func NewLink() *Link { return &Link{conns: make(map[net.Conn]struct{})} }

// Dial connects like net.DialTimeout unless the link is cut.
func (l *Link) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	l.mu.Lock()
	cut := l.cut
	l.mu.Unlock()
	if cut {
		return nil, ErrCut
	}
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut {
		return nil, errors.Join(ErrCut, c.Close())
	}
	tc := &trackedConn{Conn: c, link: l}
	l.conns[tc] = struct{}{}
	return tc, nil
}

// Cut closes every open connection and refuses new ones until Heal.
func (l *Link) Cut() {
	l.mu.Lock()
	l.cut = true
	l.mu.Unlock()
	l.Drop()
}

// Drop closes every open connection and, unlike Cut, lets the client dial
// again at once: a connection reset while the server stays reachable. Cut
// then Heal races the client's redial against Heal, and a redial that loses
// costs the library's one-second pause between passes over its servers.
func (l *Link) Drop() {
	l.mu.Lock()
	conns := make([]net.Conn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		// The client sees a broken connection; its error is irrelevant here.
		_ = c.Close()
	}
}

// Heal lets connections through again.
func (l *Link) Heal() {
	l.mu.Lock()
	l.cut = false
	l.mu.Unlock()
}

type trackedConn struct {
	net.Conn
	link *Link
	once sync.Once
}

// Close closes the connection and forgets it.
func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.link.mu.Lock()
		delete(c.link.conns, c)
		c.link.mu.Unlock()
	})
	return c.Conn.Close()
}
