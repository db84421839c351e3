package wire

import (
	"encoding/binary"
	"fmt"
)

// Iterator walks the messages of a message set (shallow: a compressed message
// is yielded as one message; see DeepIterator to expand it). It checks every
// length against the bytes it has and every CRC, and stops cleanly at a
// partial trailing message, as a fetch response may end mid-message.
//
//	it := wire.NewIterator(set, base)
//	for it.Next() {
//		use(it.Message(), it.NextOffset())
//	}
//	if err := it.Err(); err != nil { ... }
type Iterator struct {
	set     []byte
	base    Offset
	maxSize int

	pos  int // start of the next message to decode
	cur  Message
	off  Offset // offset of cur
	need int    // length of the partial trailing message, once seen
	err  error
}

// NewIterator returns an iterator over set, whose first byte is at offset base.
func NewIterator(set []byte, base Offset) *Iterator {
	return &Iterator{set: set, base: base}
}

// SetMaxMessageSize makes a size field above n an error (0: no limit).
func (it *Iterator) SetMaxMessageSize(n int) { it.maxSize = n }

// Next advances to the next complete message. It returns false at the end of
// the set, at a partial trailing message, or at a corrupt message (then Err
// says where).
func (it *Iterator) Next() bool {
	if it.err != nil || it.need > 0 || it.pos >= len(it.set) {
		return false
	}
	m, total, need, reason := decodeAt(it.set[it.pos:], it.maxSize)
	switch {
	case reason != "":
		it.err = &CorruptError{Pos: it.base + Offset(it.pos), Reason: reason}
		return false
	case need > 0:
		it.need = need
		return false
	}
	it.cur, it.off = m, it.base+Offset(it.pos)
	it.pos += total
	return true
}

// Message returns the current message; its payload aliases the set.
func (it *Iterator) Message() Message { return it.cur }

// Offset returns the offset of the current message.
func (it *Iterator) Offset() Offset { return it.off }

// NextOffset returns the offset just past the current message: the offset a
// consumer commits after processing it.
func (it *Iterator) NextOffset() Offset { return it.base + Offset(it.pos) }

// Err returns the corruption that stopped the iterator, or nil.
func (it *Iterator) Err() error { return it.err }

// ValidBytes returns the length of the complete, valid messages read so far.
func (it *Iterator) ValidBytes() int { return it.pos }

// Partial reports whether the iterator stopped at an incomplete trailing
// message, and how many bytes that whole message needs (size prefix
// included; just SizeLen when not even the size prefix arrived). A consumer
// whose fetch size is below that can never read the message.
func (it *Iterator) Partial() (need int, ok bool) { return it.need, it.need > 0 }

// Validate checks that set is a sequence of complete, valid messages, none
// with a size field above maxSize (0: no limit), and returns how many it holds.
// It is what a broker runs before appending a producer's set.
func Validate(set []byte, maxSize int) (count int, err error) {
	it := NewIterator(set, 0)
	it.SetMaxMessageSize(maxSize)
	for it.Next() {
		count++
	}
	if err := it.Err(); err != nil {
		return count, err
	}
	if need, ok := it.Partial(); ok {
		return count, &CorruptError{Pos: Offset(it.ValidBytes()),
			Reason: fmt.Sprintf("truncated: message needs %d bytes, %d remain", need, len(set)-it.ValidBytes())}
	}
	return count, nil
}

// Count returns how many messages set holds, reading only their size
// prefixes (shallow: a compressed message counts one). It is for a set
// Validate has already accepted (one a log appended); it stops at a size
// that does not fit, so it never reads past set.
func Count(set []byte) (count int) {
	for pos := 0; len(set)-pos >= SizeLen; count++ {
		size := int(int32(binary.BigEndian.Uint32(set[pos:])))
		if size < 0 || size > len(set)-pos-SizeLen {
			break
		}
		pos += SizeLen + size
	}
	return count
}
