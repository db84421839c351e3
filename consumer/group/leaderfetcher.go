package group

import (
	"context"
	"errors"
	"slices"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
)

// leaderFetcher pulls the replicated partitions one broker leads (0.8's
// ConsumerFetcherThread, one per source broker, with 0.7's MULTIFETCH,
// which the leader serves up to the high watermark): one request for all
// of them at a time on the broker's one connection, each answer's complete
// messages handed as a chunk to the queue of the stream owning the
// partition. Partitions are added by the leader finder and given back to
// it (see leaderFetchers); with none left the fetcher ends and closes its
// connection.
type leaderFetcher struct {
	l     *leaderFetchers
	bc    *brokerConn
	parts []*partitionState // guarded by l.mu

	// run's goroutine only.
	fetchWarned, resetWarned quietWarner
}

// stopped is a partition that cannot be consumed past offset.
type stopped struct {
	ps     *partitionState
	offset wire.Offset
	err    error
}

// round is what one fetch brought: chunks to hand to the streams, in the
// order of the request, partitions to give back to the finder, and
// partitions to stop.
type round struct {
	chunks  []answer
	lost    []*partitionState
	stopped []stopped
}

// run fetches until ctx ends or no partition is left.
func (f *leaderFetcher) run() {
	defer f.l.wg.Done()
	ctx, c := f.l.ctx, f.l.c
	for ctx.Err() == nil {
		parts := f.snapshot()
		if parts == nil {
			return
		}
		var r round
		err := f.bc.do(c, func(b Broker) error { return f.fetch(ctx, b, parts, &r) })
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// 0.8's processFetchRequest: every partition goes back to
			// the finder, which finds the leaders again.
			f.fetchWarned.warn(c.log, "fetch from the leader failed; finding the leaders again", "broker", f.bc.addr,
				"partitions", len(parts), "err", err)
			f.giveBack(parts, nil)
			continue
		}
		f.fetchWarned.ok(c.log, "fetching again", "broker", f.bc.addr)
		for _, s := range r.stopped {
			if n, _ := c.fail(ctx, s.ps, s.offset, s.err); n < 0 {
				return
			}
		}
		read := 0
		for _, a := range r.chunks {
			if !c.enqueue(ctx, a.ch) {
				return
			}
			a.ch.ps.fetched.Add(int64(a.valid))
			read += a.valid
		}
		if len(r.lost) > 0 || len(r.stopped) > 0 {
			stop := make([]*partitionState, len(r.stopped))
			for i, s := range r.stopped {
				stop[i] = s.ps
			}
			f.giveBack(r.lost, stop)
			continue
		}
		if read == 0 {
			f.giveBack(f.moved(parts), nil)
			if !c.pause(ctx, c.cfg.FetcherBackoff) {
				return
			}
		}
	}
}

// snapshot returns the fetcher's partitions; with none left it removes the
// fetcher and its connection, closes the connection and returns nil.
func (f *leaderFetcher) snapshot() []*partitionState {
	l := f.l
	l.mu.Lock()
	if len(f.parts) > 0 {
		parts := slices.Clone(f.parts)
		l.mu.Unlock()
		return parts
	}
	delete(l.fetchers, f.bc.addr)
	if l.conns[f.bc.addr] == f.bc {
		delete(l.conns, f.bc.addr)
	}
	l.mu.Unlock()
	f.bc.close(l.log)
	return nil
}

// giveBack removes lost and stop from the fetcher's partitions and hands
// lost to the finder; stop are not fetched again.
func (f *leaderFetcher) giveBack(lost, stop []*partitionState) {
	if len(lost)+len(stop) == 0 {
		return
	}
	l := f.l
	l.mu.Lock()
	f.parts = slices.DeleteFunc(f.parts, func(ps *partitionState) bool {
		return slices.Contains(lost, ps) || slices.Contains(stop, ps)
	})
	for _, ps := range stop {
		delete(l.where, ps)
	}
	l.mu.Unlock()
	l.handBack(lost...)
}

// fetch makes one round's requests on the leader's connection b: the
// start offsets of partitions without one, one MULTIFETCH, and the OFFSETS
// an out-of-range answer needs. Chunks are copied out of b's buffer, so
// they outlive the next request.
func (f *leaderFetcher) fetch(ctx context.Context, b Broker, parts []*partitionState, r *round) error {
	c := f.l.c
	reqs := make([]consumer.FetchRequest, 0, len(parts))
	active := make([]*partitionState, 0, len(parts))
	for _, ps := range parts {
		if ps.startAt != "" {
			// No committed offset: only the leader knows the whole log.
			off, err := offsetFor(ctx, b, ps.startAt, ps)
			if err != nil {
				c.log.Info("the leader did not say where to start; finding the leader again", "topic", ps.topic,
					"partition", ps.bp.Partition, "broker", f.bc.addr, "err", err)
				r.lost = append(r.lost, ps)
				continue
			}
			c.log.Info("no committed offset; starting at the "+ps.startAt+" offset", "topic", ps.topic,
				"partition", ps.bp.Partition, "offset", off, "broker", f.bc.addr)
			ps.fetched.Store(off)
			ps.consumed.Store(off)
			ps.startAt = ""
		}
		reqs = append(reqs, consumer.FetchRequest{Topic: ps.topic, Partition: ps.bp.Partition,
			Offset: ps.fetched.Load(), MaxSize: int32(c.cfg.FetchSize)})
		active = append(active, ps)
	}
	if len(active) == 0 {
		return nil
	}
	sets, err := b.MultiFetch(ctx, reqs...)
	if err != nil {
		return err
	}
	for i, set := range sets {
		ps := active[i]
		a := readAnswer(ps, set)
		switch {
		case a.reset:
			f.reset(ctx, b, ps, r)
		case a.misplaced != nil:
			f.resetMisplaced(ctx, b, ps, set.Offset, a.misplaced, r)
		case a.refused != nil:
			// NotLeaderForPartition, or a broker that no longer holds a
			// replica (WrongPartition): 0.8's partitionsWithError.
			c.log.Info("the broker refused the partition; finding its leader again", "topic", ps.topic,
				"partition", ps.bp.Partition, "broker", f.bc.addr, "err", a.refused)
			r.lost = append(r.lost, ps)
		case a.stop != nil:
			r.stopped = append(r.stopped, stopped{ps, set.Offset, a.stop})
		case a.ch != nil:
			r.chunks = append(r.chunks, a)
		}
	}
	return nil
}

// reset handles an OffsetOutOfRange answer. A position below the earliest
// offset left the log (retention): autooffset.reset moves it. A position
// at or beyond it is not gone but not there yet: this replica's visible end
// is behind it (a new leader that has not learned the high watermark yet,
// or a broker that no longer leads); resetting would skip or repeat
// messages, so the partition goes back to the finder.
func (f *leaderFetcher) reset(ctx context.Context, b Broker, ps *partitionState, r *round) {
	c := f.l.c
	from := ps.fetched.Load()
	earliest, latest, err := logBounds(ctx, b, ps)
	switch {
	case err != nil:
		f.resetWarned.warn(c.log, "offset out of range and the leader did not give its bounds; finding the leader again",
			"topic", ps.topic, "partition", ps.bp.Partition, "offset", from, "err", err)
		r.lost = append(r.lost, ps)
	case from >= earliest:
		f.resetWarned.warn(c.log, "offset beyond the replica's end; finding the leader again", "topic", ps.topic,
			"partition", ps.bp.Partition, "offset", from, "broker", f.bc.addr, "end", latest)
		r.lost = append(r.lost, ps)
	default:
		f.resetWarned = quietWarner{}
		c.resetTo(ps, from, earliest, latest, false)
	}
}

// resetMisplaced handles an InvalidMessage answer: no message starts at
// the position in the leader's log, which an unclean or high-watermark
// election truncated below it and which was written again since
// (Consumer.resetMisplaced). Finding the leader again would not help (0.8
// would, forever), so the position is reset on the leader's bounds.
func (f *leaderFetcher) resetMisplaced(ctx context.Context, b Broker, ps *partitionState, offset wire.Offset, refused error, r *round) {
	c := f.l.c
	from := ps.fetched.Load()
	earliest, latest, err := logBounds(ctx, b, ps)
	if err != nil {
		f.resetWarned.warn(c.log, "offset is not a message boundary and the leader did not give its bounds; finding the leader again",
			"topic", ps.topic, "partition", ps.bp.Partition, "offset", from, "err", err)
		r.lost = append(r.lost, ps)
		return
	}
	f.resetWarned = quietWarner{}
	if stop := c.resetMisplaced(ps, from, earliest, latest, refused); stop != nil {
		r.stopped = append(r.stopped, stopped{ps, offset, stop})
	}
}

// moved returns the partitions of parts whose leader is no longer this
// fetcher's broker, by a METADATA answer at most leaderRecheck old (see
// leaderFetchers' Deviation). An error keeps them here.
func (f *leaderFetcher) moved(parts []*partitionState) []*partitionState {
	md, err := f.l.metadata(leaderRecheck, f.bc)
	if err != nil {
		// A broker cut off from ZooKeeper cannot answer; another may.
		if md, err = f.l.metadata(leaderRecheck, nil); err != nil {
			return nil
		}
	}
	var out []*partitionState
	for _, ps := range parts {
		id, addr, err := consumer.LeaderAddr(md, ps.topic, ps.bp.Partition)
		if err != nil && !errors.Is(err, wire.ErrLeaderNotAvailable) {
			continue
		}
		if err != nil || addr != f.bc.addr {
			f.l.log.Info("the partition's leader moved", "topic", ps.topic, "partition", ps.bp.Partition,
				"from", f.bc.addr, "to", id)
			out = append(out, ps)
		}
	}
	return out
}
