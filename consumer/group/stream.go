package group

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/zkcoord"

	"github.com/netdb11/kafka/broker/wire"
)

// Errors of the group consumer.
var (
	// ErrClosed: the consumer was closed.
	ErrClosed = errors.New("group: consumer closed")
	// ErrTimeout: no message arrived within consumer.timeout.ms.
	ErrTimeout = errors.New("group: no message within consumer.timeout.ms")
)

// Message is one message delivered by a Stream.
type Message struct {
	// Topic and Partition say where the message comes from. A replicated
	// topic's partition has Broker zkcoord.ReplicatedBroker (-1): it is
	// read from whichever broker leads it.
	Topic     string
	Partition wire.BrokerPartition
	// NextOffset is the offset after this message: what the group commits
	// once the message is consumed. (For the inner messages of a compressed
	// message but the last, it is the compressed message's own offset, so
	// that a restart refetches the rest of it.)
	NextOffset wire.Offset
	// Payload is the message's content. It stays valid after Next returns.
	Payload []byte
}

// partitionState is one owned partition: 0.7's PartitionTopicInfo.
type partitionState struct {
	topic  string
	bp     wire.BrokerPartition
	thread string
	stream *Stream
	gen    uint64 // the ownership generation that created it

	fetched  atomicOffset // next offset to fetch; written by the fetcher
	consumed atomicOffset // next offset to commit; written by the stream
	// startAt, when not empty (OffsetSmallest or OffsetLargest), says that
	// the partition has no committed offset and its fetcher must ask the
	// leader where to start (a replicated partition); fetched and consumed
	// are -1 until then. Set before the fetcher starts, then the fetcher's.
	startAt string
	// committed is the last offset written to ZooKeeper; loop only.
	committed wire.Offset
	// misplacedAt is the last position reset because no message starts
	// there (Consumer.resetMisplaced), 0 if none; the fetcher's.
	misplacedAt wire.Offset
}

// atomicOffset is an offset read and written atomically.
type atomicOffset struct{ v atomic.Int64 }

func (a *atomicOffset) Load() wire.Offset       { return wire.Offset(a.v.Load()) }
func (a *atomicOffset) Store(o wire.Offset)     { a.v.Store(int64(o)) }
func (a *atomicOffset) Add(n int64) wire.Offset { return wire.Offset(a.v.Add(n)) }

// chunk is a fetched piece of one partition's log, on its way to a stream
// (0.7's FetchedDataChunk), or an error for the stream's reader.
type chunk struct {
	ps  *partitionState
	gen uint64
	set consumer.MessageSet // bytes owned by the chunk; set.Offset is where it starts
	err error
}

// Stream delivers the messages of the partitions assigned to one consumer
// thread of one topic (0.7's KafkaStream), in order within each partition.
// One goroutine reads a stream at a time.
//
// Consumption and commits: a message counts as consumed, and its offset as
// committable, when Next is called again on the stream (or Ack, or Close of
// the consumer). Deviation: 0.7 counted it consumed as soon as the iterator
// returned it, so that a commit racing with a crash could skip a message
// that was being processed; here a crash at any point leaves every message
// that was not fully processed to be delivered again (at-least-once).
type Stream struct {
	c        *Consumer
	topic    string
	threadID string
	queue    chan *chunk

	mu      sync.Mutex // held by Next and Ack; guards the fields below
	cur     *chunk
	it      *consumer.Iterator
	last    *partitionState // partition of the last returned message
	lastOff wire.Offset     // its NextOffset, not yet marked consumed
	pending bool            // a returned message awaits its mark
	// marks holds, with Config.ManualAck, the NextOffset of the last
	// message returned from each partition since the last Ack.
	marks map[*partitionState]wire.Offset
}

// Topic returns the stream's topic ("" for a stream of NewByFilter, which
// delivers every topic the filter allows; see Message.Topic).
func (s *Stream) Topic() string { return s.topic }

// ThreadID returns the consumer thread id "<consumerId>-<n>" that owns the
// stream's partitions in ZooKeeper.
func (s *Stream) ThreadID() string { return s.threadID }

// Next marks the previously returned message consumed (unless
// Config.ManualAck) and returns the next one, waiting for it. It returns ErrClosed once the consumer is closed,
// ErrTimeout after consumer.timeout.ms without a message, ctx's error, or
// the error of a partition that cannot be read (a corrupt message, a message
// larger than fetch.size).
func (s *Stream) Next(ctx context.Context) (Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	manual := s.c.cfg.ManualAck
	if !manual {
		s.ackLocked()
	}
	var timeout <-chan time.Time
	if s.c.cfg.ConsumerTimeout > 0 {
		t := time.NewTimer(s.c.cfg.ConsumerTimeout)
		defer t.Stop()
		timeout = t.C
	}
	for {
		if s.cur != nil && s.cur.gen == s.c.gen.Load() {
			if s.it.Next() {
				ps := s.cur.ps
				m := Message{Topic: ps.topic, Partition: ps.bp, NextOffset: s.it.NextOffset(), Payload: s.it.Payload()}
				if manual {
					if s.marks == nil {
						s.marks = make(map[*partitionState]wire.Offset)
					}
					s.marks[ps] = m.NextOffset
				} else {
					s.last, s.lastOff, s.pending = ps, m.NextOffset, true
				}
				return m, nil
			}
			err, ps := s.it.Err(), s.cur.ps
			s.cur, s.it = nil, nil
			if err != nil {
				return Message{}, fmt.Errorf("group: topic %s partition %s: %w", ps.topic, zkcoord.PartitionNodeName(ps.bp), err)
			}
		}
		s.cur, s.it = nil, nil
		select {
		case ch := <-s.queue:
			if ch.gen != s.c.gen.Load() {
				continue // fetched before a rebalance: no longer ours
			}
			if ch.err != nil {
				return Message{}, ch.err
			}
			// A chunk continues where the stream's last one of its
			// partition ended: the consumed offset, or with ManualAck the
			// last returned message's end when it is not acknowledged yet.
			got, returned := ch.ps.consumed.Load(), false
			if off, ok := s.marks[ch.ps]; ok {
				got, returned = off, true
			}
			if got != ch.set.Offset {
				s.c.log.Warn("consumed offset does not match the fetch offset; consumer may lose data",
					"topic", ch.ps.topic, "partition", zkcoord.PartitionNodeName(ch.ps.bp), "consumed", got, "fetched", ch.set.Offset)
				if returned {
					s.marks[ch.ps] = ch.set.Offset
				} else {
					ch.ps.consumed.Store(ch.set.Offset)
				}
			}
			s.cur, s.it = ch, ch.set.Iterator()
		case <-s.c.closing:
			return Message{}, ErrClosed
		case <-ctx.Done():
			return Message{}, ctx.Err()
		case <-timeout:
			return Message{}, ErrTimeout
		}
	}
}

// Ack marks the message last returned by Next consumed now, without waiting
// for the next call, so that a commit includes it; with Config.ManualAck,
// every message returned so far.
func (s *Stream) Ack() {
	s.mu.Lock()
	s.ackLocked()
	for ps, off := range s.marks {
		ps.consumed.Store(off)
	}
	clear(s.marks)
	s.mu.Unlock()
}

func (s *Stream) ackLocked() {
	if s.pending {
		// A state of an earlier generation is discarded; marking it is harmless.
		s.last.consumed.Store(s.lastOff)
		s.pending = false
	}
}

// drain drops every queued chunk; the fetchers are stopped.
func (s *Stream) drain() {
	for {
		select {
		case <-s.queue:
		default:
			return
		}
	}
}
