package zkcoord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// DefaultSessionTimeout is Kafka 0.7's zk.sessiontimeout.ms default.
const DefaultSessionTimeout = 6 * time.Second

// Config configures one ZooKeeper session (Kafka 0.7's ZKConfig keys).
type Config struct {
	// Connect is zk.connect: "host:port[,host:port...][/chroot]". A missing
	// chroot node is created.
	Connect string
	// SessionTimeout is zk.sessiontimeout.ms (default 6 s). The server clamps
	// it to its own [minSessionTimeout, maxSessionTimeout].
	SessionTimeout time.Duration
	// ConnectionTimeout is zk.connectiontimeout.ms: how long Dial waits for
	// the first session (default SessionTimeout).
	ConnectionTimeout time.Duration
	// Logger receives the session's log; nil means slog.Default().
	Logger *slog.Logger
	// Dial, when set, replaces net.DialTimeout for connections to the
	// servers. Tests use it to cut a session off until the server expires it.
	Dial func(network, address string, timeout time.Duration) (net.Conn, error)
}

// EventType says what an Event reports.
type EventType int

// The events a Conn delivers. Watch events are one-shot, as in ZooKeeper:
// the component re-reads (and so re-arms) after each.
const (
	// EventChildren: the children of Path changed.
	EventChildren EventType = iota + 1
	// EventData: the data of Path changed.
	EventData
	// EventCreated: Path was created (after a watch on a missing node).
	EventCreated
	// EventDeleted: Path was deleted.
	EventDeleted
	// EventSessionExpired: the server expired the session. Every ephemeral
	// node of the session and every watch are gone. A new session follows.
	EventSessionExpired
	// EventNewSession: a new session replaced an expired one. Components
	// re-register their ephemeral nodes and re-read (re-arm) what they watch.
	EventNewSession
	// EventDisconnected: the connection to the server was lost; the
	// session may still be alive (delivered only to a Listener made by
	// Listen).
	EventDisconnected
	// EventReconnected: the connection is back with the same session
	// (delivered only to a Listener made by Listen).
	EventReconnected
)

var eventTypeNames = map[EventType]string{
	EventChildren:       "children-changed",
	EventData:           "data-changed",
	EventCreated:        "created",
	EventDeleted:        "deleted",
	EventSessionExpired: "session-expired",
	EventNewSession:     "new-session",
	EventDisconnected:   "disconnected",
	EventReconnected:    "reconnected",
}

// String names the event type.
func (t EventType) String() string {
	if s, ok := eventTypeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is a watch firing or a session change, delivered on Conn.Events
// and on each Listener.
type Event struct {
	// Type says what happened.
	Type EventType
	// Path is the watched path relative to the chroot; empty for session events.
	Path string
}

// watchKind is the kind of watch a path can carry.
type watchKind uint8

const (
	watchChildren watchKind = iota
	watchData               // set by get and by exists on an existing node
	watchExists             // set by exists on a missing node
)

type watchKey struct {
	path string // full server path
	kind watchKind
}

// Conn is one ZooKeeper session used by one component (a broker's
// registration, a producer's cluster view, a group consumer). Paths given to
// its methods are relative to the chroot of zk.connect.
//
// Watches and session changes arrive in order on Events, read by the
// component's single event loop (0.7 used one ZkClient event thread per
// component). A path carries at most one pending watch of each kind, so
// re-reading a path that is already watched does not pile up watches.
// Several roles can share one session (a broker's registration, its
// replication layer and its controller candidate, as in 0.8): each reads
// its own Listener (Listen) instead of Events.
//
// The underlying client reconnects by itself; after an expiry it opens a new
// session and Events reports EventSessionExpired then EventNewSession.
type Conn struct {
	zk             *zk.Conn
	root           string
	log            *slog.Logger
	connect        ConnectString
	sessionTimeout time.Duration

	mu        sync.Mutex
	armed     map[watchKey]bool // pending watches; guarded by mu
	listeners []*Listener       // every listener, deflt included; guarded by mu
	deflt     *Listener         // the listener behind Events, made on first use; guarded by mu
	sessions  int               // sessions established so far; guarded by mu
	expired   bool              // the session expired and no new one yet; guarded by mu
	closed    bool              // guarded by mu
	lostAt    time.Time         // when the connection was lost; zero while connected with a session; guarded by mu

	ready     chan struct{} // closed when the first session is established
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

// Dial opens a session and waits up to ConnectionTimeout (and ctx) until the
// server has granted it, then creates the chroot if it is missing.
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	cs, err := ParseConnect(cfg.Connect)
	if err != nil {
		return nil, err
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.SessionTimeout < 0 {
		return nil, fmt.Errorf("zkcoord: zk.sessiontimeout.ms must be positive, got %v", cfg.SessionTimeout)
	}
	if cfg.ConnectionTimeout == 0 {
		cfg.ConnectionTimeout = cfg.SessionTimeout
	}
	if cfg.ConnectionTimeout < 0 {
		return nil, fmt.Errorf("zkcoord: zk.connectiontimeout.ms must be positive, got %v", cfg.ConnectionTimeout)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Conn{
		root:           cs.Chroot,
		log:            log.With("zk", cs.String()),
		connect:        cs,
		sessionTimeout: cfg.SessionTimeout,
		armed:          make(map[watchKey]bool),
		ready:          make(chan struct{}),
		done:           make(chan struct{}),
	}
	conn, _, err := zk.Connect(cs.Servers, cfg.SessionTimeout,
		zk.WithLogInfo(false),
		zk.WithLogger(zkLogger{c.log}),
		zk.WithEventCallback(c.onEvent),
		zk.WithDialer(handshakeCapped(cfg.Dial, cfg.SessionTimeout)))
	if err != nil {
		return nil, fmt.Errorf("zkcoord: connect to %s: %w", cs, err)
	}
	c.mu.Lock()
	c.zk = conn // the callback may already run; it reads c.zk under mu
	c.mu.Unlock()

	timer := time.NewTimer(cfg.ConnectionTimeout)
	defer timer.Stop()
	select {
	case <-c.ready:
	case <-timer.C:
		c.Close()
		return nil, fmt.Errorf("zkcoord: no ZooKeeper session with %s within %v (zk.connectiontimeout.ms)", cs, cfg.ConnectionTimeout)
	case <-ctx.Done():
		c.Close()
		return nil, fmt.Errorf("zkcoord: connect to %s: %w", cs, ctx.Err())
	}
	if c.root != "" {
		if err := c.createParents(c.root + "/x"); err != nil {
			c.Close()
			return nil, fmt.Errorf("zkcoord: create chroot %s: %w", c.root, err)
		}
	}
	return c, nil
}

// Events returns the channel on which watch firings and session changes
// arrive, in order. It is closed by Close. Exactly one goroutine should read
// it. Its listener is made at the first call of Events or the first watch
// set; roles sharing the session read a Listener each instead (Listen).
func (c *Conn) Events() <-chan Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed && c.deflt == nil {
		ch := make(chan Event)
		close(ch)
		return ch
	}
	return c.defaultListenerLocked().events
}

// SessionID returns the current session id (0 while there is none).
func (c *Conn) SessionID() int64 { return c.zk.SessionID() }

// SessionTimeout returns the session timeout asked for.
func (c *Conn) SessionTimeout() time.Duration { return c.sessionTimeout }

// Connect returns the parsed zk.connect string of the session.
func (c *Conn) Connect() ConnectString { return c.connect }

// Close ends the session (the server deletes its ephemeral nodes at once),
// stops every listener and closes Events. It is safe to call more than once.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		ls := c.listeners
		c.listeners = nil
		c.mu.Unlock()
		close(c.done)
		c.zk.Close()
		for _, l := range ls {
			l.stop()
		}
	})
	return nil
}

// onEvent is the client library's callback for every session change and
// watch firing. It runs on the library's goroutines and must not block.
func (c *Conn) onEvent(ev zk.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	switch ev.Type {
	case zk.EventSession:
		c.onSessionLocked(ev.State)
	case zk.EventNodeCreated:
		c.fireLocked(ev.Path, EventCreated, watchExists)
	case zk.EventNodeDataChanged:
		c.fireLocked(ev.Path, EventData, watchExists, watchData)
	case zk.EventNodeChildrenChanged:
		c.fireLocked(ev.Path, EventChildren, watchChildren)
	case zk.EventNodeDeleted:
		c.fireLocked(ev.Path, EventDeleted, watchExists, watchData, watchChildren)
	}
	// zk.EventNotWatching: watches dropped at expiry or close, handled
	// through the session state.
}

// DisconnectedSince returns when the connection to ZooKeeper was lost, or
// the zero time while the client is connected with a session (or has never
// had one). While disconnected, the server may expire the session without
// the client learning of it until it reconnects: a broker that must not act
// on a lapsed session (a partition leader) counts from this time.
func (c *Conn) DisconnectedSince() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lostAt
}

func (c *Conn) onSessionLocked(state zk.State) {
	var session string
	if c.zk != nil {
		session = fmt.Sprintf("%#x", c.zk.SessionID())
	}
	switch state {
	case zk.StateHasSession:
		wasLost := !c.lostAt.IsZero()
		c.lostAt = time.Time{}
		c.sessions++
		if c.sessions == 1 {
			close(c.ready)
			c.log.Debug("zookeeper session established", "session", session)
			return
		}
		if c.expired {
			c.expired = false
			c.log.Info("new zookeeper session after expiry", "session", session)
			c.enqueueLocked(Event{Type: EventNewSession})
			return
		}
		c.log.Debug("zookeeper connection re-established", "session", session)
		if wasLost {
			c.enqueueLocked(Event{Type: EventReconnected})
		}
	case zk.StateExpired:
		c.expired = true
		// The server dropped every watch of the session with it.
		clear(c.armed)
		c.log.Warn("zookeeper session expired")
		c.enqueueLocked(Event{Type: EventSessionExpired})
	case zk.StateDisconnected:
		if c.sessions > 0 {
			if c.lostAt.IsZero() {
				c.lostAt = time.Now()
				c.enqueueLocked(Event{Type: EventDisconnected})
			}
			c.log.Debug("zookeeper connection lost; reconnecting")
		}
	}
}

func (c *Conn) fireLocked(full string, t EventType, kinds ...watchKind) {
	for _, k := range kinds {
		delete(c.armed, watchKey{full, k})
	}
	p, ok := c.relative(full)
	if !ok {
		return
	}
	c.enqueueLocked(Event{Type: t, Path: p})
}

// enqueueLocked hands ev to every listener that takes its kind.
func (c *Conn) enqueueLocked(ev Event) {
	state := ev.Type == EventDisconnected || ev.Type == EventReconnected
	for _, l := range c.listeners {
		if !state || l.states {
			l.enqueueLocked(ev)
		}
	}
}

// full turns a chroot-relative path into a server path.
func (c *Conn) full(p string) (string, error) {
	if err := ValidatePath(p); err != nil {
		return "", fmt.Errorf("zkcoord: %w", err)
	}
	if c.root == "" {
		return p, nil
	}
	if p == "/" {
		return c.root, nil
	}
	return c.root + p, nil
}

// relative turns a server path into a chroot-relative one.
func (c *Conn) relative(full string) (string, bool) {
	if c.root == "" {
		return full, true
	}
	if full == c.root {
		return "/", true
	}
	if strings.HasPrefix(full, c.root+"/") {
		return full[len(c.root):], true
	}
	return "", false
}

// arm records a pending watch; it reports false when one is already pending.
func (c *Conn) arm(k watchKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.armed[k] {
		return false
	}
	if !c.closed {
		c.defaultListenerLocked() // Events must see the firing, even if read later
	}
	c.armed[k] = true
	return true
}

func (c *Conn) disarm(k watchKey) {
	c.mu.Lock()
	delete(c.armed, k)
	c.mu.Unlock()
}

// Errors returned by Conn. They are wrapped with the operation and path.
var (
	// ErrNoNode: the node does not exist.
	ErrNoNode = errors.New("zkcoord: node does not exist")
	// ErrNodeExists: the node exists already (see *NodeExistsError).
	ErrNodeExists = errors.New("zkcoord: node exists")
	// ErrNotEmpty: the node has children.
	ErrNotEmpty = errors.New("zkcoord: node has children")
	// ErrBadVersion: the node changed since it was read.
	ErrBadVersion = errors.New("zkcoord: node version changed")
	// ErrFenced: a write made only while a fence node stays at a version
	// (a controller's /controller_epoch) found it moved, and wrote nothing.
	ErrFenced = errors.New("zkcoord: fenced: the fence node moved")
	// ErrRegistered: a write made only while no broker has registered
	// since the writer read the brokers (Replication.SeenRegistrations)
	// found that one had, and wrote nothing.
	ErrRegistered = errors.New("zkcoord: a broker registered since the brokers were read")
	// ErrConnectionLoss: the connection was lost or the session expired
	// during the operation; it may or may not have been applied.
	ErrConnectionLoss = errors.New("zkcoord: connection to ZooKeeper lost")
	// ErrClosed: the Conn was closed.
	ErrClosed = errors.New("zkcoord: connection closed")
)

// wrap is wrapErr, reporting ErrClosed once Close was called.
func (c *Conn) wrap(op, path string, err error) error {
	if err == nil {
		return nil
	}
	select {
	case <-c.done:
		return fmt.Errorf("%w: %s %s", ErrClosed, op, path)
	default:
	}
	return wrapErr(op, path, err)
}

// wrapErr maps the client library's errors to zkcoord's and adds context.
func wrapErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var kind error
	switch {
	case errors.Is(err, zk.ErrNoNode):
		kind = ErrNoNode
	case errors.Is(err, zk.ErrNodeExists):
		kind = ErrNodeExists
	case errors.Is(err, zk.ErrNotEmpty):
		kind = ErrNotEmpty
	case errors.Is(err, zk.ErrBadVersion):
		kind = ErrBadVersion
	case errors.Is(err, zk.ErrClosing):
		kind = ErrClosed
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrSessionExpired),
		errors.Is(err, zk.ErrNoServer), errors.Is(err, zk.ErrSessionMoved):
		kind = ErrConnectionLoss
	default:
		return fmt.Errorf("zkcoord: %s %s: %w", op, path, err)
	}
	return fmt.Errorf("%w: %s %s", kind, op, path)
}
