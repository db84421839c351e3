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

// fetcher pulls the owned partitions that live on one broker (0.7's
// FetcherRunnable): one MULTIFETCH for all of them at a time, each answer's
// complete messages handed as a chunk to the queue of the stream owning the
// partition, which blocks the fetcher when full (queuedchunks.max). After a
// fetch that brought nothing it pauses fetcher.backoff.ms.
//
// Deviation: 0.7's fetcher thread ended at a network error and the partitions
// waited for the next rebalance; this one reconnects after a backoff, so a
// broker restart is followed without a rebalance.
type fetcher struct {
	c      *Consumer
	broker zkcoord.BrokerInfo
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
	defer func() {
		if err := conn.Close(); err != nil {
			f.log.Warn("closing broker connection", "broker", f.broker.Addr(), "err", err)
		}
	}()
	for _, ps := range f.parts {
		f.log.Info("start fetching", "topic", ps.topic, "partition", ps.bp.String(), "offset", ps.fetched.Load(),
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
			if !f.pause(ctx) {
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
		if read == 0 && !f.pause(ctx) {
			return
		}
	}
}

// handle processes one partition's answer. It returns the bytes handed to
// the stream (-1 when ctx ended) and whether the partition must stop.
func (f *fetcher) handle(ctx context.Context, conn Broker, ps *partitionState, set consumer.MessageSet) (int, bool) {
	if err := set.Err(); err != nil {
		switch {
		case errors.Is(err, wire.ErrOffsetOutOfRange):
			f.reset(ctx, conn, ps)
			return 0, false
		case errors.Is(err, consumer.ErrNotBoundary):
			// Fetching again cannot help: stop the partition, with the error.
			return f.fail(ctx, ps, set, fmt.Errorf("group: topic %s partition %s: %w", ps.topic, ps.bp, err))
		}
		f.refusedWarned.warn(f.log, "broker refused a fetch", "topic", ps.topic, "partition", ps.bp.String(),
			"offset", set.Offset, "err", err)
		return 0, false
	}
	it := wire.NewIterator(set.Bytes, wire.Offset(set.Offset))
	for it.Next() {
	}
	valid := it.ValidBytes()
	if valid > 0 {
		data := make([]byte, valid)
		copy(data, set.Bytes[:valid]) // the connection reuses its buffer
		cs := set
		cs.Bytes = data
		if !f.enqueue(ctx, &chunk{ps: ps, gen: ps.gen, set: cs}) {
			return -1, false
		}
		ps.fetched.Add(int64(valid))
		return valid, false
	}
	var perr error
	if err := it.Err(); err != nil {
		perr = fmt.Errorf("group: topic %s partition %s: %w", ps.topic, ps.bp, err)
	} else if need, partial := it.Partial(); partial && need > set.MaxBytes {
		perr = fmt.Errorf("group: topic %s partition %s: %w", ps.topic, ps.bp,
			&consumer.MessageTooLargeError{Topic: ps.topic, Partition: ps.bp.Partition, Offset: set.Offset, Size: need, FetchSize: set.MaxBytes})
	}
	if perr == nil {
		return 0, false // nothing new yet
	}
	return f.fail(ctx, ps, set, perr)
}

// fail stops a partition that cannot be consumed past set.Offset, handing
// the error to its stream's reader.
func (f *fetcher) fail(ctx context.Context, ps *partitionState, set consumer.MessageSet, err error) (int, bool) {
	f.log.Error("partition cannot be consumed past this offset", "topic", ps.topic, "partition", ps.bp.String(),
		"offset", set.Offset, "err", err)
	if !f.enqueue(ctx, &chunk{ps: ps, gen: ps.gen, err: err}) {
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
// latest offset, as autooffset.reset says (0.7's resetConsumerOffsets), and
// logs it at WARN with what it skips: the bytes retention deleted before
// they were consumed, and the bytes still held that will not be (those
// between the earliest offset and the log end, with largest).
func (f *fetcher) reset(ctx context.Context, conn Broker, ps *partitionState) {
	from := ps.fetched.Load()
	earliest, err := offsetFor(ctx, conn, OffsetSmallest, ps)
	var latest wire.Offset
	if err == nil {
		latest, err = offsetFor(ctx, conn, OffsetLargest, ps)
	}
	if err != nil {
		f.resetWarned.warn(f.log, "offset out of range and the reset failed; retrying", "topic", ps.topic,
			"partition", ps.bp.String(), "offset", from, "err", err)
		return
	}
	to := earliest
	if f.c.cfg.AutoOffsetReset == OffsetLargest {
		to = latest
	}
	deleted := max(0, min(earliest, to)-from) // gone before it was consumed
	skipped := max(0, to-max(from, earliest)) // held, and jumped over
	rewound := max(0, min(from, latest)-to)   // to be consumed again
	f.resetWarned = quietWarner{}
	f.log.Warn(fmt.Sprintf("offset %d of %s partition %s is out of range (the log holds %d to %d); reset to %d (autooffset.reset=%s): %d bytes were deleted before they were consumed, %d bytes still held are skipped",
		from, ps.topic, ps.bp, earliest, latest, to, f.c.cfg.AutoOffsetReset, deleted, skipped),
		"topic", ps.topic, "partition", ps.bp.String(), "from", from, "to", to,
		"deleted_bytes", deleted, "skipped_bytes", skipped, "rewound_bytes", rewound)
	ps.fetched.Store(to)
	ps.consumed.Store(to)
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
		return 0, fmt.Errorf("group: broker gave no %s offset for %s partition %s", reset, ps.topic, ps.bp)
	}
	return offs[0], nil
}

func (f *fetcher) enqueue(ctx context.Context, ch *chunk) bool {
	select {
	case ch.ps.stream.queue <- ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// pause waits fetcher.backoff.ms; it reports false when ctx ended.
func (f *fetcher) pause(ctx context.Context) bool {
	if f.c.cfg.FetcherBackoff <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(f.c.cfg.FetcherBackoff)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
