package server

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// errBudget is wrapped by the error of a connection that waited for request
// memory (queued.max.request.bytes) until its frame's deadline.
var errBudget = errors.New("request memory exhausted (queued.max.request.bytes)")

// budget counts the bytes that requests being read and handled hold beyond
// each connection's initial read buffer -- a read buffer grown for larger
// frames, and the buffers of frames larger than that -- and bounds them
// broker-wide (queued.max.request.bytes). A connection that needs more
// than is free waits, reading nothing meanwhile (TCP backpressure stops its
// client), until other requests give bytes back, its frame's deadline
// passes, or the server shuts down; this is what Kafka's SocketServer does
// when its memory pool is empty (it mutes the channel).
type budget struct {
	limit int64 // <= 0: no limit (bytes are still counted)

	mu    sync.Mutex
	used  int64         // guarded by mu
	freed chan struct{} // closed, and replaced, when bytes are given back; guarded by mu
}

func newBudget(limit int64) *budget {
	return &budget{limit: limit, freed: make(chan struct{})}
}

// acquire takes n bytes, waiting for them until deadline (zero: no
// deadline) or until stop is closed.
func (b *budget) acquire(n int64, deadline time.Time, stop <-chan struct{}) error {
	var timer <-chan time.Time
	for {
		b.mu.Lock()
		if b.limit <= 0 || b.used+n <= b.limit {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		used := b.used
		b.mu.Unlock()
		if timer == nil && !deadline.IsZero() {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-freed:
		case <-timer:
			return fmt.Errorf("%w: waited for %d bytes, %d of %d in use: %w", errBudget, n, used, b.limit, os.ErrDeadlineExceeded)
		case <-stop:
			return fmt.Errorf("%w: shutting down: %w", errBudget, os.ErrDeadlineExceeded)
		}
	}
}

// release gives n bytes back and wakes the connections waiting for some.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// inUse returns the bytes held now.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
