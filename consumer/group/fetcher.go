package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/zkcoord"
)

// fetcher pulls the owned partitions of 0.7 topics that live on one broker
// (0.7's FetcherRunnable): one MULTIFETCH for all of them at a time, each
// answer's complete messages handed as a chunk to the queue of the stream
// owning the partition, which blocks the fetcher when full
// (queuedchunks.max). After a fetch that brought nothing it pauses
// fetcher.backoff.ms. Replicated partitions are fetched from their leaders
// by leaderFetchers instead.
//
// Deviation: 0.7's fetcher thread ended at a network error and the partitions
// waited for the next rebalance; this one reconnects after a backoff, so a
// broker restart is followed without a rebalance.
type fetcher struct {
	c      *Consumer
	broker zkcoord.BrokerInfo // the broker fetched from
	parts  []*partitionState
	log    *slog.Logger

	// Repeated failures are logged at WARN the first time, then ever more
	// rarely (quietWarner); run's goroutine only.
	fetchWarned, refusedWarned, resetWarned quietWarner
}

// run fetches until ctx ends.
func (f *fetcher) run(ctx context.Context) {
	conn, err := f.c.cfg.dialBroker(f.broker.Addr(), f.log)
	if err != nil {
		f.log.Error("cannot open a broker connection; not fetching", "broker", f.broker.Addr(), "err", err)
		return
	}
	f.fetchFrom(ctx, conn)
	if err := conn.Close(); err != nil {
		f.log.Warn("closing broker connection", "broker", f.broker.Addr(), "err", err)
	}
}

// fetchFrom fetches from conn until ctx ends or every partition failed.
func (f *fetcher) fetchFrom(ctx context.Context, conn Broker) {
	for _, ps := range f.parts {
		f.log.Info("start fetching", "topic", ps.topic, "partition", zkcoord.PartitionNodeName(ps.bp), "offset", ps.fetched.Load(),
			"broker", f.broker.Addr(), "thread", ps.thread)
	}
	failed := make([]bool, len(f.parts))
	reqs := make([]consumer.FetchRequest, 0, len(f.parts))
	active := make([]*partitionState, 0, len(f.parts))
	for ctx.Err() == nil {
		reqs, active = reqs[:0], active[:0]
		for i, ps := range f.parts {
			if !failed[i] {
				reqs = append(reqs, consumer.FetchRequest{Topic: ps.topic, Partition: ps.bp.Partition,
					Offset: ps.fetched.Load(), MaxSize: int32(f.c.cfg.FetchSize)})
				active = append(active, ps)
			}
		}
		if len(active) == 0 {
			return // every partition failed; the readers have the errors
		}
		sets, err := conn.MultiFetch(ctx, reqs...)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			f.fetchWarned.warn(f.log, "fetch failed; retrying", "broker", f.broker.Addr(), "err", err)
			if !f.c.pause(ctx, f.c.cfg.FetcherBackoff) {
				return
			}
			continue
		}
		f.fetchWarned.ok(f.log, "fetching again", "broker", f.broker.Addr())
		read := 0
		for i, set := range sets {
			n, stop := f.handle(ctx, conn, active[i], set)
			if stop {
				for j, ps := range f.parts {
					if ps == active[i] {
						failed[j] = true
					}
				}
			}
			if n < 0 {
				return // ctx ended while a queue was full
			}
			read += n
		}
		if read == 0 && !f.c.pause(ctx, f.c.cfg.FetcherBackoff) {
			return
		}
	}
}

// handle processes one partition's answer. It returns the bytes handed to
// the stream (-1 when ctx ended) and whether the partition must stop.
func (f *fetcher) handle(ctx context.Context, conn Broker, ps *partitionState, set consumer.MessageSet) (int, bool) {
	a := readAnswer(ps, set)
	switch {
	case a.reset:
		f.reset(ctx, conn, ps)
	case a.misplaced != nil:
		if stop := f.resetMisplaced(ctx, conn, ps, a.misplaced); stop != nil {
			return f.c.fail(ctx, ps, set.Offset, stop)
		}
	case a.refused != nil:
		f.refusedWarned.warn(f.log, "broker refused a fetch", "topic", ps.topic, "partition", zkcoord.PartitionNodeName(ps.bp),
			"offset", set.Offset, "err", a.refused)
	case a.stop != nil:
		return f.c.fail(ctx, ps, set.Offset, a.stop)
	case a.ch != nil:
		if !f.c.enqueue(ctx, a.ch) {
			return -1, false
		}
		ps.fetched.Add(int64(a.valid))
		return a.valid, false
	}
	return 0, false
}

// answer is what one partition's part of a fetch answer means for it.
type answer struct {
	ch      *chunk // complete messages, copied out of the connection's buffer
	valid   int    // their bytes
	reset   bool   // OffsetOutOfRange: the position left the log
	refused error  // another broker error: fetch again (or find the leader again)
	stop    error  // the partition cannot be consumed past set.Offset
	// misplaced is the broker's InvalidMessage answer to a fetch at a
	// position where no message starts (see Consumer.resetMisplaced).
	misplaced error
}

// readAnswer reads one partition's part of a fetch answer; the chunk's
// bytes are copied, so the connection may be used again at once.
func readAnswer(ps *partitionState, set consumer.MessageSet) answer {
	if err := set.Err(); err != nil {
		switch {
		case errors.Is(err, wire.ErrOffsetOutOfRange):
			return answer{reset: true}
		case errors.Is(err, consumer.ErrNotBoundary):
			// Fetching again cannot help: the position must move.
			return answer{misplaced: fmt.Errorf("group: topic %s partition %s: %w", ps.topic, zkcoord.PartitionNodeName(ps.bp), err)}
		}
		return answer{refused: err}
	}
	it := wire.NewIterator(set.Bytes, wire.Offset(set.Offset))
	for it.Next() {
	}
	if valid := it.ValidBytes(); valid > 0 {
		data := make([]byte, valid)
		copy(data, set.Bytes[:valid]) // the connection reuses its buffer
		cs := set
		cs.Bytes = data
		return answer{ch: &chunk{ps: ps, gen: ps.gen, set: cs}, valid: valid}
	}
	if err := it.Err(); err != nil {
		return answer{stop: fmt.Errorf("group: topic %s partition %s: %w", ps.topic, zkcoord.PartitionNodeName(ps.bp), err)}
	}
	if need, partial := it.Partial(); partial && need > set.MaxBytes {
		return answer{stop: fmt.Errorf("group: topic %s partition %s: %w", ps.topic, zkcoord.PartitionNodeName(ps.bp),
			&consumer.MessageTooLargeError{Topic: ps.topic, Partition: ps.bp.Partition, Offset: set.Offset, Size: need, FetchSize: set.MaxBytes})}
	}
	return answer{} // nothing new yet
}

// fail stops a partition that cannot be consumed past offset, handing the
// error to its stream's reader. It returns -1 when ctx ended first.
func (c *Consumer) fail(ctx context.Context, ps *partitionState, offset wire.Offset, err error) (int, bool) {
	c.log.Error("partition cannot be consumed past this offset", "topic", ps.topic, "partition", zkcoord.PartitionNodeName(ps.bp),
		"offset", offset, "err", err)
	if !c.enqueue(ctx, &chunk{ps: ps, gen: ps.gen, err: err}) {
		return -1, true
	}
	return 0, true
}

// quietWarner logs a failure that repeats at WARN the first time, then
// again only after waits that double from a second up to a minute, with how
// often it happened in between; ok logs the recovery at INFO and resets it.
// A group consumer whose broker is down thus logs a few lines, not one per
// retry.
type quietWarner struct {
	next    time.Time
	every   time.Duration
	repeats int
}

func (q *quietWarner) warn(log *slog.Logger, msg string, args ...any) {
	now := time.Now()
	if !q.next.IsZero() && now.Before(q.next) {
		q.repeats++
		return
	}
	if q.repeats > 0 {
		args = append(args, "repeated", q.repeats, "since", q.every)
	}
	log.Warn(msg, args...)
	q.repeats = 0
	q.every = min(max(2*q.every, time.Second), time.Minute)
	q.next = now.Add(q.every)
}

func (q *quietWarner) ok(log *slog.Logger, msg string, args ...any) {
	if q.next.IsZero() {
		return
	}
	log.Info(msg, args...)
	*q = quietWarner{}
}

// reset moves a partition whose offset left the log to the earliest or
// latest offset, as autooffset.reset says (0.7's resetConsumerOffsets).
func (f *fetcher) reset(ctx context.Context, conn Broker, ps *partitionState) {
	from := ps.fetched.Load()
	earliest, latest, err := logBounds(ctx, conn, ps)
	if err != nil {
		f.resetWarned.warn(f.log, "offset out of range and the reset failed; retrying", "topic", ps.topic,
			"partition", zkcoord.PartitionNodeName(ps.bp), "offset", from, "err", err)
		return
	}
	f.resetWarned = quietWarner{}
	f.c.resetTo(ps, from, earliest, latest, false)
}

// resetMisplaced handles a fetch the broker refused because no message
// starts at the partition's position (see Consumer.resetMisplaced). It
// returns the error that stops the partition, or nil.
func (f *fetcher) resetMisplaced(ctx context.Context, conn Broker, ps *partitionState, refused error) error {
	from := ps.fetched.Load()
	earliest, latest, err := logBounds(ctx, conn, ps)
	if err != nil {
		f.resetWarned.warn(f.log, "offset is not a message boundary and the reset failed; retrying", "topic", ps.topic,
			"partition", zkcoord.PartitionNodeName(ps.bp), "offset", from, "err", err)
		return nil
	}
	f.resetWarned = quietWarner{}
	return f.c.resetMisplaced(ps, from, earliest, latest, refused)
}

// logBounds asks the broker for a partition's earliest and latest offsets.
func logBounds(ctx context.Context, conn Broker, ps *partitionState) (earliest, latest wire.Offset, err error) {
	if earliest, err = offsetFor(ctx, conn, OffsetSmallest, ps); err != nil {
		return 0, 0, err
	}
	latest, err = offsetFor(ctx, conn, OffsetLargest, ps)
	return earliest, latest, err
}

// resetTo moves a partition whose position from left the log (which holds
// earliest to latest), or with misplaced lies inside a message of it, to
// the earliest or latest offset, as autooffset.reset says, counts it
// (Consumer.Resets) and logs it at WARN with what it skips: the bytes
// retention deleted before they were consumed, and the bytes still held
// that will not be (those between the earliest offset and the log end,
// with largest), or that will be consumed again (rewound, with smallest).
func (c *Consumer) resetTo(ps *partitionState, from, earliest, latest wire.Offset, misplaced bool) {
	to := earliest
	if c.cfg.AutoOffsetReset == OffsetLargest {
		to = latest
	}
	deleted := max(0, min(earliest, to)-from) // gone before it was consumed
	skipped := max(0, to-max(from, earliest)) // held, and jumped over
	rewound := max(0, min(from, latest)-to)   // to be consumed again
	why := "is out of range"
	if misplaced {
		why = "is not a message boundary (it lies inside a message: the log was truncated and written again, or the offset is wrong)"
		c.resets.notBoundary.Add(1)
	} else {
		c.resets.outOfRange.Add(1)
	}
	c.log.Warn(fmt.Sprintf("offset %d of %s partition %s %s (the log holds %d to %d); reset to %d (autooffset.reset=%s): %d bytes were deleted before they were consumed, %d bytes still held are skipped, %d bytes are read again",
		from, ps.topic, zkcoord.PartitionNodeName(ps.bp), why, earliest, latest, to, c.cfg.AutoOffsetReset, deleted, skipped, rewound),
		"topic", ps.topic, "partition", zkcoord.PartitionNodeName(ps.bp), "from", from, "to", to, "not_boundary", misplaced,
		"deleted_bytes", deleted, "skipped_bytes", skipped, "rewound_bytes", rewound)
	ps.fetched.Store(to)
	ps.consumed.Store(to)
}

// resetMisplaced handles a fetch at from that the broker refused because
// no message starts there (InvalidMessage, refused): the position lies
// inside a message of a log that was truncated below it and written again
// with other messages (an unclean or high-watermark election of a
// replicated partition), or a committed offset was wrong. The partition is
// reset as for OffsetOutOfRange (resetTo). It returns the error that stops
// the partition instead when a reset already left from (the log is damaged
// there: reading again from the earliest offset came back to it), or nil.
//
// Deviation: Kafka 0.7's broker serves a fetch at any offset and its
// consumer's iterator then fails on the garbage (InvalidMessageException)
// or waits for a message too large to come, and 0.8's logical offsets
// cannot fall inside a message; here such a position is reset by
// autooffset.reset, logged at WARN and counted (Resets.NotBoundary).
func (c *Consumer) resetMisplaced(ps *partitionState, from, earliest, latest wire.Offset, refused error) error {
	if ps.misplacedAt == from && from > 0 {
		return fmt.Errorf("%w (again after a reset: the log is damaged there)", refused)
	}
	ps.misplacedAt = from
	c.resetTo(ps, from, earliest, latest, true)
	return nil
}

// offsetFor asks the broker for the earliest or the latest offset of a partition.
func offsetFor(ctx context.Context, conn Broker, reset string, ps *partitionState) (wire.Offset, error) {
	t := wire.EarliestTime
	if reset == OffsetLargest {
		t = wire.LatestTime
	}
	offs, err := conn.OffsetsBefore(ctx, ps.topic, ps.bp.Partition, t, 1)
	if err != nil {
		return 0, err
	}
	if len(offs) == 0 {
		return 0, fmt.Errorf("group: broker gave no %s offset for %s partition %s", reset, ps.topic, zkcoord.PartitionNodeName(ps.bp))
	}
	return offs[0], nil
}

func (c *Consumer) enqueue(ctx context.Context, ch *chunk) bool {
	select {
	case ch.ps.stream.queue <- ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// pause waits d (fetcher.backoff.ms); it reports false when ctx ended.
func (c *Consumer) pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
