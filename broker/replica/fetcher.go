package replica

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/replica/peer"
	"github.com/netdb11/kafka/broker/wire"
)

// fetcher is a follower's copy loop for one partition (0.8's
// ReplicaFetcherThread, one per partition here): it truncates the log where
// the new leader says (TruncationPoint), then fetches from the leader's log
// end on, appends the bytes unchanged, records the leader's epoch marks and
// learns the HW.
//
// Deviation: 0.8 runs one fetcher thread per source broker, fetching all
// the partitions it follows from that broker in one request; here each
// partition has its own fetcher and connection, which keeps the loop and
// its truncation simple at the cost of more requests with many partitions.
//
// Deviation: KIP-101 stamps each message batch with its leader epoch; 0.7's
// message format has no field for it, so the leader sends its epoch marks
// for the fetched range in the REPLICA_FETCH response instead, and the
// follower records them as it appends (same resulting epoch file).
type fetcher struct {
	m      *Manager
	p      *partition
	leader BrokerID
	addr   string
	epoch  int32
	c      *peer.Client
	req    []byte // the last request frame, reused
	// refused is the offset of the last fetch the leader refused as not a
	// boundary or out of range (-1: none since the last truncation).
	refused Offset
	stop    chan struct{}
	done    chan struct{}
}

func (m *Manager) startFetcher(p *partition, leader BrokerID, addr string, epoch int32) *fetcher {
	f := &fetcher{m: m, p: p, leader: leader, addr: addr, epoch: epoch, refused: -1,
		c: peer.For(m.cfg.TLS, leader, addr, m.cfg.RequestTimeout), stop: make(chan struct{}), done: make(chan struct{})}
	go f.run()
	return f
}

// halt stops the fetcher and waits for it.
func (f *fetcher) halt() {
	close(f.stop)
	f.c.Close()
	<-f.done
}

// sleep waits for the backoff; false if the fetcher is stopping.
func (f *fetcher) sleep() bool {
	t := time.NewTimer(f.m.cfg.Backoff)
	defer t.Stop()
	select {
	case <-f.stop:
		return false
	case <-t.C:
		return true
	}
}

func (f *fetcher) stopping() bool {
	select {
	case <-f.stop:
		return true
	default:
		return false
	}
}

// truncatedHook, when set (by tests), is called by a fetcher right after it
// truncated its log for a new leader, with the partition, the point and
// the fetcher's stop channel; it may block (until stop closes) to hold the
// follower between truncating and fetching, as the KIP-101 scenarios need.
var truncatedHook atomic.Pointer[func(topic string, point Offset, stop <-chan struct{})]

// ask sends OFFSET_FOR_LEADER_EPOCH to the leader.
func (f *fetcher) ask(epoch int32) (int32, Offset, error) {
	frame := wire.AppendOffsetForLeaderEpochRequest(nil, &wire.OffsetForLeaderEpochRequest{
		Topic: f.p.topic, Partition: f.p.partition, CurrentLeaderEpoch: f.epoch, LeaderEpoch: epoch})
	code, body, err := f.c.RoundTrip(frame, 0)
	if err != nil {
		return 0, 0, err
	}
	if code != wire.CodeNone {
		return 0, 0, fmt.Errorf("offset for leader epoch %d from broker %d: %w", epoch, f.leader, code.Err())
	}
	e, end, err := wire.DecodeOffsetForLeaderEpochResponse(body)
	return e, Offset(end), err
}

// truncate cuts the log for the new leader and reports success.
func (f *fetcher) truncate() error {
	p := f.p
	leo := p.log.WrittenEnd()
	p.mu.Lock()
	hw := p.hw
	p.mu.Unlock()
	point, err := TruncationPoint(f.m.cfg.Truncation, p.epochs.Entries(), leo, hw, f.ask)
	if err != nil {
		return err
	}
	if f.refused >= 0 && point >= f.refused {
		// The leader refused a fetch at f.refused (not a message
		// boundary, or beyond its end) and the epochs would keep it: the
		// two logs hold different bytes within one epoch (a leader that
		// lost its tail and led on in the same epoch). Cut to the HW,
		// what this replica knows to be committed, rather than be refused
		// at the same offset forever.
		if hw < f.refused {
			f.m.log.Warn("epoch truncation keeps an offset the leader refused; truncating to the high watermark",
				"partition", p.partKey.String(), "refused", f.refused, "point", point, "hw", hw)
			point = min(hw, point)
		} else {
			// Even the HW is refused: the logs differ below it (left by
			// replica.truncation=hw or an unclean election, which promise
			// nothing). Copy the leader's log afresh rather than never
			// rejoin.
			f.m.log.Warn("the leader refuses this replica's high watermark: its log differs below it; copying the leader's log from the start",
				"partition", p.partKey.String(), "refused", f.refused, "hw", hw)
			point = p.log.StartOffset()
		}
	}
	f.refused = -1
	if start := p.log.StartOffset(); point < start {
		// Retention deleted this replica's log above the point (only an
		// unbounded retention, or a log that differs below the HW, leaves
		// that): nothing of it is kept; start over, empty, at the point
		// (Kafka's truncateFullyAndStartAt).
		if err := p.log.TruncateFullyAndStartAt(point); err != nil {
			return &storageError{err}
		}
		f.m.log.Warn("truncation point below this replica's log start: starting over there", "partition", p.partKey.String(),
			"point", point, "log_start", start, "log_end", leo, "leader", f.leader, "epoch", f.epoch)
	} else if point < leo {
		if err := p.log.Truncate(point); err != nil {
			return &storageError{err}
		}
		f.m.log.Info("follower truncated", "partition", p.partKey.String(), "from", leo, "to", point,
			"leader", f.leader, "epoch", f.epoch, "rule", string(f.m.cfg.Truncation))
	}
	if err := p.epochs.TruncateFrom(point); err != nil {
		return &storageError{err}
	}
	p.setFollowerHW(min(hw, point))
	return nil
}

// startOverIfBelowLeaderStart handles a fetch at off refused as out of
// range (rule 4; 0.8's handleOffsetOutOfRange): when off is below the
// leader's log start, retention deleted what this replica lacks, and it
// starts over, empty, at the leader's log start. Otherwise the log must be
// truncated again.
func (f *fetcher) startOverIfBelowLeaderStart(off Offset) (bool, error) {
	p := f.p
	frame := wire.AppendRequest(nil, &wire.Request{Type: wire.RequestOffsets,
		Offsets: &wire.OffsetsRequest{Topic: p.topic, Partition: p.partition, Time: wire.EarliestTime, MaxOffsets: 1}})
	code, body, err := f.c.RoundTrip(frame, 0)
	if err != nil {
		return false, err
	}
	if code != wire.CodeNone {
		return false, fmt.Errorf("log start of broker %d: %w", f.leader, code.Err())
	}
	offs, err := wire.DecodeOffsetsResponse(body)
	if err != nil || len(offs) == 0 {
		return false, fmt.Errorf("log start of broker %d: %v (%w)", f.leader, offs, err)
	}
	start := offs[0]
	if off >= start {
		return false, nil
	}
	f.m.log.Warn("follower's log ends below the leader's log start: starting over there", "partition", p.partKey.String(),
		"log_end", off, "leader_start", start, "leader", f.leader)
	if err := p.log.TruncateFullyAndStartAt(start); err != nil {
		return false, &storageError{err}
	}
	if err := p.epochs.TruncateFrom(0); err != nil {
		return false, &storageError{err}
	}
	p.mu.Lock()
	p.hw = start
	p.mu.Unlock()
	return true, nil
}

// storageError marks a failure of this replica's own files, as opposed to
// the leader's answer or the network: the follower cannot go on (rule 5).
type storageError struct{ err error }

func (e *storageError) Error() string { return e.err.Error() }
func (e *storageError) Unwrap() error { return e.err }

// run is the fetcher's loop. It truncates the log once when it starts (the
// replica has just become a follower of f.leader in f.epoch), then fetches
// at the log's end and appends. It truncates again only when the log and
// the leader's may differ: the leader refused a fetch (not a message
// boundary, out of range), or an append failed in a way that leaves the
// log's state in doubt (appended elsewhere than fetched, errNoProgress).
//
// A full disk (log.ErrNoSpace) is not such a failure: the log wrote nothing
// and stays writable, so the fetch is retried at the same offset, without
// truncating. Kafka 0.8's ReplicaFetcherThread likewise truncates only when
// a replica becomes a follower and retries a failed fetch at the same
// offset. Truncating at each retry is not harmless: with
// replica.truncation=hw it cuts the log to the follower's own HW, which lags
// the leader's, so an ISR member ends below the leader's HW (StrongIsr
// broken with no leader change); with epoch truncation it costs a round
// trip to the leader per retry.
func (f *fetcher) run() {
	defer close(f.done)
	p := f.p
	truncated := false
	for !f.stopping() {
		if !truncated {
			if err := f.truncate(); err != nil {
				if se := (*storageError)(nil); errors.As(err, &se) {
					f.m.abdicate(p, err)
					return
				}
				if !f.stopping() {
					f.m.log.Debug("follower truncation: retrying", "partition", p.partKey.String(), "leader", f.leader, "err", err)
				}
				if !f.sleep() {
					return
				}
				continue
			}
			truncated = true
			if h := truncatedHook.Load(); h != nil {
				(*h)(p.topic, p.log.WrittenEnd(), f.stop)
			}
		}
		off := p.log.WrittenEnd()
		f.req = wire.AppendReplicaFetchRequest(f.req[:0], &wire.ReplicaFetchRequest{
			ReplicaID: f.m.cfg.BrokerID, MaxWaitMs: int32(f.m.cfg.FetchWait / time.Millisecond),
			Topic: p.topic, Partition: p.partition, LeaderEpoch: f.epoch, Offset: off,
			MaxSize: int32(f.m.cfg.FetchMaxBytes)})
		code, body, err := f.c.RoundTrip(f.req, f.m.cfg.FetchWait)
		if err != nil {
			if !f.stopping() {
				f.m.log.Debug("replica fetch failed", "partition", p.partKey.String(), "leader", f.leader, "err", err)
			}
			if !f.sleep() {
				return
			}
			continue
		}
		switch code {
		case wire.CodeNone:
		case wire.CodeOffsetOutOfRange:
			started, err := f.startOverIfBelowLeaderStart(off)
			if se := (*storageError)(nil); errors.As(err, &se) {
				f.m.abdicate(p, err)
				return
			}
			if started {
				continue
			}
			f.m.log.Warn("replica fetch refused; truncating again", "partition", p.partKey.String(), "offset", off, "code", code, "err", err)
			truncated, f.refused = false, off
			if !f.sleep() {
				return
			}
			continue
		case wire.CodeNotMessageBoundary:
			f.refused = off
			f.m.log.Warn("replica fetch refused; truncating again", "partition", p.partKey.String(), "offset", off, "code", code)
			truncated = false
			fallthrough
		default:
			if !f.sleep() {
				return
			}
			continue
		}
		resp, err := wire.DecodeReplicaFetchResponse(body)
		if err != nil {
			f.m.log.Warn("bad replica fetch response", "partition", p.partKey.String(), "err", err)
			if !f.sleep() {
				return
			}
			continue
		}
		if err := f.append(off, resp); err != nil {
			if se := (*storageError)(nil); errors.As(err, &se) {
				f.m.abdicate(p, err)
				return
			}
			if errors.Is(err, log.ErrNoSpace) {
				// Nothing was written: fetch again at the same offset.
				f.m.log.Error("follower append failed: disk full; retrying at the same offset", "partition", p.partKey.String(), "offset", off, "err", err)
			} else {
				f.m.log.Error("follower append failed", "partition", p.partKey.String(), "offset", off, "err", err)
				truncated = false
			}
			if !f.sleep() {
				return
			}
			continue
		}
	}
}

// errNoProgress: the leader's bytes hold no complete message though the
// fetch was as large as allowed.
var errNoProgress = errors.New("replica: fetched bytes hold no complete message (replica.fetch.max.bytes below a message?)")

// append writes the complete messages of a fetch response at off, unchanged,
// and records the leader's epochs for them and the HW. A failed write of the
// epoch file, or a log whose earlier write failed (log.ErrFailed: it refuses
// appends until reopened), is a storageError: the follower cannot hold the
// leader's bytes with their epochs and gives up its role (rule 5; 0.8's
// ReplicaFetcherThread halts the broker on a KafkaStorageException). A full
// disk (log.ErrNoSpace, not sticky: nothing was written) is returned as is,
// and run retries the fetch at the same offset without truncating.
func (f *fetcher) append(off Offset, resp *wire.ReplicaFetchResponse) error {
	p := f.p
	// The complete messages: walk the size fields only; Append checks
	// every message (size, magic, CRC) once, as for a producer's set.
	valid, need := completePrefix(resp.Messages)
	if valid > 0 {
		first, err := p.log.Append(resp.Messages[:valid])
		if errors.Is(err, log.ErrFailed) {
			return &storageError{err}
		}
		if err != nil {
			return err
		}
		if first != off {
			return fmt.Errorf("replica: appended at %d, fetched at %d", first, off)
		}
		end := off + Offset(valid)
		for _, mk := range resp.Epochs {
			start := max(Offset(mk.Start), off)
			if start < end {
				if err := p.epochs.Assign(mk.Epoch, start); err != nil {
					return &storageError{err}
				}
			}
		}
	} else if need > 0 && len(resp.Messages) >= f.m.cfg.FetchMaxBytes {
		return fmt.Errorf("%w: message of %d bytes at %d", errNoProgress, need, off)
	}
	p.setFollowerHW(Offset(resp.HW))
	return nil
}

// completePrefix returns the length of the complete messages at the start of
// set, judged by their size fields alone, and the size of the partial
// message after them (0 if none).
func completePrefix(set []byte) (valid, need int) {
	for {
		rest := set[valid:]
		if len(rest) == 0 {
			return valid, 0
		}
		if len(rest) < wire.SizeLen {
			return valid, wire.SizeLen
		}
		size := int(int32(uint32(rest[0])<<24 | uint32(rest[1])<<16 | uint32(rest[2])<<8 | uint32(rest[3])))
		if size < 0 {
			return valid, 0 // corrupt: Append of what follows would refuse it
		}
		if wire.SizeLen+size > len(rest) {
			return valid, wire.SizeLen + size
		}
		valid += wire.SizeLen + size
	}
}
