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
//
// A replicated fetcher pulls one partition of a replicated topic from its
// leader (0.8's ConsumerFetcherThread, with 0.7's FETCH, which the leader
// serves up to the high watermark): it finds the leader in the partition's
// state in ZooKeeper, and finds it again, continuing from its own next
// offset, when the broker fails, refuses the partition, or no longer leads
// it. Below the high watermark every in-sync replica holds the same bytes at
// the same offsets, and a new leader comes from the ISR, so the position
// stays valid: nothing is skipped and nothing read twice.
type fetcher struct {
	c          *Consumer
	broker     zkcoord.BrokerInfo // the broker fetched from (a replicated fetcher's: the leader found last)
	parts      []*partitionState
	replicated bool // one partition of a replicated topic, fetched from its leader
	log        *slog.Logger

	// relead is set when a replicated partition must find its leader
	// again; leaderChecked is when ZooKeeper was last asked. run's
	// goroutine only.
	relead        bool
	leaderChecked time.Time

	// Repeated failures are logged at WARN the first time, then ever more
	// rarely (quietWarner); run's goroutine only.
	fetchWarned, refusedWarned, resetWarned, leaderWarned quietWarner
}

// leaderRecheck is how often a replicated fetcher that receives nothing
// asks ZooKeeper whether the partition's leader moved (a leader deposed
// while alive keeps serving what it has, as a follower, but no longer grows).
const leaderRecheck = time.Second

// run fetches until ctx ends.
func (f *fetcher) run(ctx context.Context) {
	if !f.replicated {
		conn, err := f.c.cfg.dialBroker(f.broker.Addr(), f.log)
		if err != nil {
			f.log.Error("cannot open a broker connection; not fetching", "broker", f.broker.Addr(), "err", err)
			return
		}
		f.fetchFrom(ctx, conn)
		f.closeConn(conn)
		return
	}
	ps := f.parts[0]
	for ctx.Err() == nil {
		leader, st, err := f.c.conn.PartitionLeader(ps.topic, ps.bp.Partition)
		f.leaderChecked = time.Now()
		if err != nil {
			f.leaderWarned.warn(f.log, "no leader to fetch from; looking again", "topic", ps.topic,
				"partition", ps.bp.Partition, "err", err)
			if !f.pause(ctx) {
				return
			}
			continue
		}
		f.leaderWarned.ok(f.log, "found the leader", "topic", ps.topic, "partition", ps.bp.Partition,
			"leader", leader.ID)
		conn, err := f.c.cfg.dialBroker(leader.Addr(), f.log)
		if err != nil {
			f.log.Warn("cannot open a connection to the leader", "broker", leader.Addr(), "err", err)
			if !f.pause(ctx) {
				return
			}
			continue
		}
		f.broker, f.relead = leader, false
		if ps.startAt != "" {
			off, err := offsetFor(ctx, conn, ps.startAt, ps)
			if err != nil {
				f.leaderWarned.warn(f.log, "the leader did not say where to start; looking again", "topic", ps.topic,
					"partition", ps.bp.Partition, "leader", leader.ID, "err", err)
				f.closeConn(conn)
				if !f.pause(ctx) {
					return
				}
				continue
			}
			f.log.Info("no committed offset; starting at the "+ps.startAt+" offset", "topic", ps.topic,
				"partition", ps.bp.Partition, "offset", off, "leader", leader.ID)
			ps.fetched.Store(off)
			ps.consumed.Store(off)
			ps.startAt = ""
		}
		f.log.Info("fetching from the leader", "topic", ps.topic, "partition", ps.bp.Partition,
			"leader", leader.ID, "leader_epoch", st.LeaderEpoch, "offset", ps.fetched.Load())
		f.fetchFrom(ctx, conn)
		f.closeConn(conn)
		if ctx.Err() == nil && !f.pause(ctx) {
			return
		}
	}
}

func (f *fetcher) closeConn(conn Broker) {
	if err := conn.Close(); err != nil {
		f.log.Warn("closing broker connection", "broker", f.broker.Addr(), "err", err)
	}
}

// fetchFrom fetches from conn until ctx ends, every partition failed, or
// (replicated) the partition must find its leader again.
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
			if f.replicated {
				return // the leader may have gone: find it again
			}
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
		if f.relead {
			return
		}
		if read == 0 {
			if f.replicated && time.Since(f.leaderChecked) >= leaderRecheck && f.leaderMoved() {
				return
			}
			if !f.pause(ctx) {
				return
			}
		}
	}
}

// leaderMoved asks ZooKeeper whether a replicated partition's leader is
// another broker than the one fetched from.
func (f *fetcher) leaderMoved() bool {
	ps := f.parts[0]
	f.leaderChecked = time.Now()
	st, _, ok, err := zkcoord.ReplicationOn(f.c.conn).PartitionStateOf(ps.topic, ps.bp.Partition)
	if err != nil || !ok {
		return false // keep fetching from what we have
	}
	if st.Leader != f.broker.ID {
		f.log.Info("the partition's leader moved", "topic", ps.topic, "partition", ps.bp.Partition,
			"from", f.broker.ID, "to", st.Leader, "leader_epoch", st.LeaderEpoch)
		return true
	}
	return false
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
			return f.fail(ctx, ps, set, fmt.Errorf("group: topic %s partition %s: %w", ps.topic, zkcoord.PartitionNodeName(ps.bp), err))
		}
		f.refusedWarned.warn(f.log, "broker refused a fetch", "topic", ps.topic, "partition", zkcoord.PartitionNodeName(ps.bp),
			"offset", set.Offset, "err", err)
		if f.replicated {
			// NotLeaderForPartition, or a broker that no longer holds a
			// replica (WrongPartition): find the leader again.
			f.relead = true
		}
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
		perr = fmt.Errorf("group: topic %s partition %s: %w", ps.topic, zkcoord.PartitionNodeName(ps.bp), err)
	} else if need, partial := it.Partial(); partial && need > set.MaxBytes {
		perr = fmt.Errorf("group: topic %s partition %s: %w", ps.topic, zkcoord.PartitionNodeName(ps.bp),
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
	f.log.Error("partition cannot be consumed past this offset", "topic", ps.topic, "partition", zkcoord.PartitionNodeName(ps.bp),
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
			"partition", zkcoord.PartitionNodeName(ps.bp), "offset", from, "err", err)
		return
	}
	if f.replicated && from >= earliest {
		// Not gone, not there yet: this replica's visible end is behind
		// the position (a new leader that has not flushed or learned the
		// high watermark yet, or a broker that no longer leads). Resetting
		// would skip or repeat messages; wait and ask the leader again.
		f.resetWarned.warn(f.log, "offset beyond the replica's end; finding the leader again", "topic", ps.topic,
			"partition", ps.bp.Partition, "offset", from, "broker", f.broker.ID, "end", latest)
		f.relead = true
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
		from, ps.topic, zkcoord.PartitionNodeName(ps.bp), earliest, latest, to, f.c.cfg.AutoOffsetReset, deleted, skipped),
		"topic", ps.topic, "partition", zkcoord.PartitionNodeName(ps.bp), "from", from, "to", to,
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
		return 0, fmt.Errorf("group: broker gave no %s offset for %s partition %s", reset, ps.topic, zkcoord.PartitionNodeName(ps.bp))
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
