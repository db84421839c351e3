package consumer

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/netdb11/kafka/broker/wire"
)

// MessageSet is the answer to one fetch: the bytes of the partition's log
// from Offset, as the broker sent them (it may end in a partial message).
// Bytes alias the SimpleConsumer's buffer: they are valid until its next
// request (Clone keeps them).
type MessageSet struct {
	// Topic and Partition name the partition fetched.
	Topic     string
	Partition wire.Partition
	// Offset is where the fetch started: the offset of Bytes[0].
	Offset wire.Offset
	// MaxBytes is the fetch size that was asked for.
	MaxBytes int
	// Code is the broker's error code for this fetch.
	Code wire.ErrorCode
	// Bytes is the raw message set.
	Bytes []byte

	// arena holds the expanded inner sets of compressed messages; it is the
	// SimpleConsumer's, reused at its next request (nil: a new buffer for
	// each compressed message).
	arena *arena
}

// Err returns the broker's error for this fetch as a *BrokerError, or nil.
func (s MessageSet) Err() error {
	if s.Code == wire.CodeNone {
		return nil
	}
	return &BrokerError{Topic: s.Topic, Partition: s.Partition, Offset: s.Offset, Code: s.Code}
}

// Clone returns a copy whose bytes do not alias the consumer's buffers: its
// iterators expand compressed messages into buffers of their own, so their
// payloads stay valid for as long as the caller holds them.
func (s MessageSet) Clone() MessageSet {
	s.Bytes = append([]byte(nil), s.Bytes...)
	s.arena = nil
	return s
}

// Iterator returns an iterator over the set's messages, compressed ones
// expanded. For a set from a SimpleConsumer, inner messages are expanded
// into a buffer the consumer reuses at its next request, so consuming
// compressed sets allocates nothing per message or per set once that buffer
// has grown; their payloads are valid as long as the set's Bytes are (until
// the next request). When the set holds several compressed messages and
// there is more than one processor, a goroutine expands the later ones
// while the caller iterates the earlier ones (ahead.go); it ends by itself,
// and the consumer's next request waits for it.
func (s MessageSet) Iterator() *Iterator {
	it := &Iterator{set: s, deep: wire.NewDeepIterator(s.Bytes, wire.Offset(s.Offset)), err: s.Err()}
	if s.arena != nil {
		it.deep.SetAlloc(s.arena.alloc)
		if s.Code == wire.CodeNone && runtime.GOMAXPROCS(0) > 1 {
			if h := startAhead(s.arena, s.Bytes, s.Offset); h != nil {
				it.deep.SetExpanded(h.expanded)
			}
		}
	}
	return it
}

// arena hands out disjoint pieces of one buffer, for the expanded sets of
// the compressed messages of one response, and starts over at the next
// request. Iterators of the sets of one MULTIFETCH may run in separate
// goroutines, hence the lock (taken once per compressed message).
type arena struct {
	mu   sync.Mutex
	buf  []byte // buf[:len(buf)] is handed out; cap is what there is
	want int    // bytes asked for since reset, whether they fit or not

	// wg counts the goroutines expanding compressed messages ahead of an
	// iterator (ahead.go) into the arena; stop asks them to give up.
	wg   sync.WaitGroup
	stop atomic.Bool
}

// maxArena bounds the buffer an arena keeps between requests; a response
// that expands to more gets new buffers for the excess.
const maxArena = 64 << 20

// alloc returns a slice of length 0 and capacity n that no other call until
// the next reset returns. Its capacity is exactly n, so an append past it
// reallocates rather than overwriting the next piece.
func (a *arena) alloc(n int) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.want += n
	l := len(a.buf)
	if cap(a.buf)-l < n {
		return make([]byte, 0, n)
	}
	a.buf = a.buf[:l+n]
	return a.buf[l : l : l+n]
}

// reset makes the whole buffer available again, grown to what the last
// response asked for: the caller guarantees that nothing handed out before
// is still in use (a SimpleConsumer's sets are valid until its next request).
func (a *arena) reset() {
	a.stop.Store(true)
	a.wg.Wait() // before the lock: they allocate from the arena
	a.stop.Store(false)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.want > cap(a.buf) && a.want <= maxArena {
		a.buf = make([]byte, 0, a.want)
	}
	a.buf, a.want = a.buf[:0], 0
}

// Iterator walks a MessageSet as 0.7's ByteBufferMessageSet iterator does:
// each message with the offset to fetch next, compressed sets expanded, every
// CRC checked. It stops at the first corrupt message (Err wraps
// wire.ErrInvalidMessage; the message is not delivered) and at a partial
// trailing message, which the next fetch, from NextOffset, gets whole. When
// not even one message fits in the fetch size, Err is a
// *MessageTooLargeError.
//
//	it := set.Iterator()
//	for it.Next() {
//		use(it.Payload(), it.NextOffset())
//	}
//	if err := it.Err(); err != nil { ... }
type Iterator struct {
	set   MessageSet
	deep  *wire.DeepIterator
	err   error
	count int
	done  bool
}

// Next advances to the next message; it returns false at the end of the
// set or at an error (see Err).
func (it *Iterator) Next() bool {
	if it.err != nil || it.done {
		return false
	}
	if it.deep.Next() {
		it.count++
		return true
	}
	it.done = true
	if err := it.deep.Err(); err != nil {
		it.err = err
		return false
	}
	if need, partial := it.deep.Partial(); partial && it.count == 0 && need > it.set.MaxBytes {
		it.err = &MessageTooLargeError{Topic: it.set.Topic, Partition: it.set.Partition,
			Offset: it.set.Offset, Size: need, FetchSize: it.set.MaxBytes}
	}
	return false
}

// Payload returns the current message's payload; it aliases the set.
func (it *Iterator) Payload() []byte { return it.deep.Message().Payload }

// Message returns the current message.
func (it *Iterator) Message() wire.Message { return it.deep.Message() }

// NextOffset returns the offset to fetch from to continue after the current
// message (for an inner message of a compressed set other than its last,
// the set's own offset, as in 0.7).
func (it *Iterator) NextOffset() wire.Offset { return it.deep.NextOffset() }

// Err returns what stopped the iteration early, or nil.
func (it *Iterator) Err() error { return it.err }

// ValidBytes returns the length of the complete outer messages read so far:
// NextOffset after the last message of an uncompressed set is
// Offset+ValidBytes.
func (it *Iterator) ValidBytes() int { return it.deep.ValidBytes() }
