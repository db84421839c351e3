// Package server is the broker's network side: it accepts connections,
// reads Kafka 0.7 request frames, runs them against the log manager and
// writes the responses, sending fetched bytes from the segment files to the
// sockets with sendfile(2).
//
// Paper §3.1: consumers pull from the broker, which keeps no per-consumer
// state and no cache of its own (it relies on the file system page cache),
// and the sendfile API moves the bytes of a fetch from file to socket
// without copying them through the application.
//
// # Connections
//
// Each connection has one goroutine that reads a frame, handles it and
// writes its response before reading the next, so a client's requests are
// answered in order and a client that does not read its responses stops
// being read (TCP backpressure bounds the memory it can make the broker
// hold). A frame's size prefix is checked against max.socket.request.bytes
// before anything is allocated, and the frame buffer then grows only as
// bytes actually arrive, so a client that announces 100 MB and sends
// nothing costs nothing.
//
// # Bounded resources
//
// What clients can make the broker hold is bounded three ways:
//
//   - connections.max.idle.ms (Kafka's key and default, 10 minutes): a
//     connection that sends nothing for that long between requests is
//     closed, and so is one whose request is not complete that long after
//     its size prefix arrived (a client that sends part of a frame and
//     stops).
//   - queued.max.request.bytes (Kafka's key; default 256 MiB here, -1 in
//     Kafka): the bytes held by requests being read and handled, beyond
//     each connection's first 8 KiB read buffer, are counted broker-wide
//     (QueuedRequestBytes) and capped; a connection that needs more waits,
//     reading nothing, until others give bytes back or its frame's
//     deadline passes. A frame's buffer grows only as its bytes arrive (at
//     most twice what arrived) and is dropped once the request is handled.
//   - METADATA requests are decoded with their topics deduplicated and at
//     most wire.MaxMetadataTopics distinct ones (wire.DecodeMetadataRequest).
//
// # Bad input
//
// A request the protocol can answer with an error code gets that code:
// OffsetOutOfRange, WrongPartition, InvalidFetchSize (negative maxSize),
// InvalidMessage (a FETCH at an offset inside a message), Unknown (a topic
// name that Kafka's rule refuses). Anything else -- a
// malformed or unknown request, a size prefix out of range, a produce
// request that fails (bad CRC, bad topic, wrong partition; PRODUCE has no
// response), or one the broker could not append (a full disk, a failed
// log) -- is logged with its cause and the connection is closed, as Kafka
// 0.7's SocketServer does; a producer that follows its PRODUCEs with any
// request that has a response learns of it. Other connections are not affected.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/props"
)

// Config configures a Server.
type Config struct {
	// Logs is the log manager the requests run against (required).
	Logs *log.Manager
	// MaxRequestSize bounds a request frame (max.socket.request.bytes).
	MaxRequestSize int32
	// SendBuffer and ReceiveBuffer set SO_SNDBUF and SO_RCVBUF of accepted
	// connections (socket.send.buffer, socket.receive.buffer); 0 leaves the
	// system's default.
	SendBuffer, ReceiveBuffer int
	// UseSendfile selects the zero-copy fetch path (fetch.use.sendfile).
	// false copies through user space; it exists only for the ablation.
	UseSendfile bool
	// ShutdownTimeout bounds how long Serve waits, once its context is
	// done, for connections to finish the request they are handling.
	ShutdownTimeout time.Duration
	// ChoosePartition picks a partition in [0, n) for a PRODUCE to
	// partition -1 (nil: uniformly at random, as Kafka 0.7).
	ChoosePartition func(n int) int
	// Logger receives the server's logs (nil: slog.Default()).
	Logger *slog.Logger
	// Extension serves the replication layer's requests and bounds what
	// 0.7's requests see of replicated partitions (nil: the 2011 broker).
	Extension Extension
	// Observer is told of connections, requests and the bytes produced and
	// fetched, for metrics (nil: nothing is observed).
	Observer Observer
	// MaxIdle closes a connection that sends no request for this long, or
	// whose request is not complete this long after its size prefix
	// arrived (connections.max.idle.ms); 0 never closes one.
	MaxIdle time.Duration
	// MaxQueuedRequestBytes caps the bytes held by requests being read and
	// handled beyond each connection's initial read buffer, broker-wide
	// (queued.max.request.bytes); -1 or 0: no cap. A cap must be at least
	// MaxRequestSize, or the largest request could never be read.
	MaxQueuedRequestBytes int64
}

// Validate checks every field against its key's bounds (see Keys) and the
// shutdown timeout, and returns one message per bad field (joined). Logs is
// checked by New.
func (c *Config) Validate() error {
	errs := []error{props.Each("server", Keys.Validate(c))}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, props.Wrap("server", fmt.Errorf("the shutdown timeout must be positive, got %v", c.ShutdownTimeout)))
	}
	if c.MaxQueuedRequestBytes > 0 && c.MaxQueuedRequestBytes < int64(c.MaxRequestSize) {
		errs = append(errs, props.Wrap("server", props.Invalid("queued.max.request.bytes", c.MaxQueuedRequestBytes,
			fmt.Sprintf("must be -1 (no cap) or at least max.socket.request.bytes (%d), or no request that large could be read", c.MaxRequestSize))))
	}
	return errors.Join(errs...)
}

// Server serves the Kafka 0.7 protocol on the listeners given to Serve.
type Server struct {
	cfg Config
	log *slog.Logger

	wg sync.WaitGroup // one per connection goroutine

	mem  *budget       // request memory (queued.max.request.bytes)
	done chan struct{} // closed when shutdown begins: connections waiting for mem give up

	// merged counts PRODUCE requests appended together with an earlier one
	// (see pipelinedProduces).
	merged atomic.Int64

	mu      sync.Mutex         // guards conns and closing
	conns   map[*conn]struct{} // open connections
	closing bool               // set once shutdown began
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logs == nil {
		return nil, errors.New("server: Config.Logs is nil")
	}
	if cfg.ChoosePartition == nil {
		cfg.ChoosePartition = rand.IntN
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return &Server{cfg: cfg, log: logger, conns: make(map[*conn]struct{}),
		mem: newBudget(cfg.MaxQueuedRequestBytes), done: make(chan struct{})}, nil
}

// QueuedRequestBytes returns the bytes that requests being read and handled
// hold now beyond each connection's initial read buffer: what
// queued.max.request.bytes caps.
func (s *Server) QueuedRequestBytes() int64 { return s.mem.inUse() }

// Serve serves the client port: ServeListener with the zero Listener.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.ServeListener(ctx, ln, Listener{})
}

// ServeListener accepts connections on ln until ctx is done, then shuts down
// gracefully: it closes ln, lets every connection finish the request it is
// handling (and any complete request already buffered), closes the
// connections, and returns once their goroutines have ended. Connections
// still writing after ShutdownTimeout are closed under them. Serve closes
// ln. It returns nil after a shutdown caused by ctx, and the accept error
// otherwise. A broker serves its two listeners with one Server (sharing its
// request budget and shutdown): the shutdown of either stops the
// connections of both.
func (s *Server) ServeListener(ctx context.Context, ln net.Listener, l Listener) error {
	stop := make(chan struct{})
	watcherDone := make(chan struct{})
	go func() {
		defer close(watcherDone)
		select {
		case <-ctx.Done():
		case <-stop:
		}
		ln.Close()
	}()
	err := s.acceptLoop(ctx, ln, l)
	close(stop)
	<-watcherDone
	s.shutdown()
	return err
}

func (s *Server) acceptLoop(ctx context.Context, ln net.Listener, l Listener) error {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				// Out of file descriptors and the like: wait and retry, as
				// net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Error("accept failed; retrying", "err", err, "backoff", backoff)
				select {
				case <-time.After(backoff):
				case <-ctx.Done():
					return nil
				}
				continue
			}
			return fmt.Errorf("server: accept: %w", err)
		}
		backoff = 0
		s.start(nc, l)
	}
}

// isTemporary reports accept errors worth retrying (EMFILE, ENFILE,
// ECONNABORTED...), which the net package still marks as temporary.
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// start sets up a connection accepted on l and starts its goroutine (which
// does the TLS handshake, if l has TLS).
func (s *Server) start(nc net.Conn, l Listener) {
	if tc, ok := nc.(*net.TCPConn); ok {
		if s.cfg.SendBuffer > 0 {
			if err := tc.SetWriteBuffer(s.cfg.SendBuffer); err != nil {
				s.log.Warn("setting socket.send.buffer", "remote", nc.RemoteAddr(), "err", err)
			}
		}
		if s.cfg.ReceiveBuffer > 0 {
			if err := tc.SetReadBuffer(s.cfg.ReceiveBuffer); err != nil {
				s.log.Warn("setting socket.receive.buffer", "remote", nc.RemoteAddr(), "err", err)
			}
		}
	}
	if l.TLS != nil {
		nc = tls.Server(nc, l.TLS)
	}
	c := newConn(s, nc)
	c.peer.InterBroker = l.InterBroker
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	obs := s.cfg.Observer
	if obs != nil {
		obs.ConnOpened()
	}
	go func() {
		defer s.wg.Done()
		c.serve()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		if obs != nil {
			obs.ConnClosed()
		}
	}()
}

// serveConn serves one connection on the caller's goroutine (tests and
// fuzzing use it with in-memory connections).
func (s *Server) serveConn(nc net.Conn) {
	newConn(s, nc).serve()
}

// shutdown stops every connection: reads fail at once (a read deadline in
// the past), so each goroutine ends after the request it is handling;
// after ShutdownTimeout the connections are closed under them.
func (s *Server) shutdown() {
	s.mu.Lock()
	if !s.closing {
		close(s.done)
	}
	s.closing = true
	for c := range s.conns {
		c.stopReading()
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(s.cfg.ShutdownTimeout)
	defer timer.Stop()
	select {
	case <-done:
		return
	case <-timer.C:
	}
	s.mu.Lock()
	n := len(s.conns)
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.log.Warn("shutdown timeout: closed connections still writing", "connections", n, "timeout", s.cfg.ShutdownTimeout)
	<-done
}
