package producer

import (
	"math/rand/v2"
	"unicode/utf8"
)

// Partitioner picks the partition of a keyed message (0.7's
// partitioner.class). Partition returns an index in [0, numPartitions) of
// the topic's sorted partition list; it must be safe for concurrent use.
// key is never nil when the producer calls it.
type Partitioner interface {
	Partition(key []byte, numPartitions int) int
}

// PartitionerFunc adapts a function to the Partitioner interface.
type PartitionerFunc func(key []byte, numPartitions int) int

// Partition calls f.
func (f PartitionerFunc) Partition(key []byte, numPartitions int) int { return f(key, numPartitions) }

// DefaultPartitioner is 0.7's DefaultPartitioner: a random partition for a
// nil key, otherwise abs(hash(key)) mod numPartitions, where hash is Java's
// String.hashCode of the key read as UTF-8, so a Java 0.7 producer with
// String keys and this one agree on every key's partition.
type DefaultPartitioner struct{}

// Partition returns the key's partition.
func (DefaultPartitioner) Partition(key []byte, numPartitions int) int {
	if numPartitions <= 0 {
		return -1
	}
	if key == nil {
		return rand.IntN(numPartitions)
	}
	h := JavaStringHash(key)
	if h < 0 {
		// Deviation: Java's math.abs(Int.MinValue) stays negative and 0.7
		// then throws InvalidPartitionException; such a key goes to
		// partition 0 here.
		h = -h
		if h < 0 {
			h = 0
		}
	}
	return int(h % int32(min(numPartitions, 1<<31-1)))
}

// JavaStringHash returns Java's String.hashCode of b decoded as UTF-8:
// s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, in int32 arithmetic.
// Invalid UTF-8 bytes count as U+FFFD, as Java's decoder makes them.
func JavaStringHash(b []byte) int32 {
	var h int32
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			h = 31*h + int32(c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		i += n
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}
