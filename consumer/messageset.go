package consumer

import (
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
}

// Err returns the broker's error for this fetch as a *BrokerError, or nil.
func (s MessageSet) Err() error {
	if s.Code == wire.CodeNone {
		return nil
	}
	return &BrokerError{Topic: s.Topic, Partition: s.Partition, Offset: s.Offset, Code: s.Code}
}

// Clone returns a copy whose bytes do not alias the consumer's buffer.
func (s MessageSet) Clone() MessageSet {
	s.Bytes = append([]byte(nil), s.Bytes...)
	return s
}

// Iterator returns an iterator over the set's messages, compressed ones
// expanded.
func (s MessageSet) Iterator() *Iterator {
	return &Iterator{set: s, deep: wire.NewDeepIterator(s.Bytes, wire.Offset(s.Offset)), err: s.Err()}
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
