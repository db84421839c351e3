package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/netdb11/kafka/broker/server"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// Serve answers one replication request (server.Extension).
func (m *Manager) Serve(frame []byte, w *server.ResponseWriter) error {
	if refused, err := m.authorize(frame, w); refused {
		return err
	}
	switch t := wire.RequestType(int16(frame[0])<<8 | int16(frame[1])); t {
	case wire.RequestReplicaFetch:
		r, err := wire.DecodeReplicaFetchRequest(frame)
		if err != nil {
			return err
		}
		return m.replicaFetch(r, w)
	case wire.RequestProduceAcks:
		r, err := wire.DecodeProduceAcksRequest(frame)
		if err != nil {
			return err
		}
		res := m.produceAcks(r)
		w.Produced(r.Parts, res)
		w.Write(wire.AppendProduceAcksResponse(nil, res))
	case wire.RequestOffsetForLeaderEpoch:
		r, err := wire.DecodeOffsetForLeaderEpochRequest(frame)
		if err != nil {
			return err
		}
		code, epoch, end := m.offsetForLeaderEpoch(r)
		w.Write(wire.AppendOffsetForLeaderEpochResponse(nil, code, epoch, int64(end)))
	case wire.RequestLeaderAndISR:
		r, err := wire.DecodeLeaderAndISRRequest(frame)
		if err != nil {
			return err
		}
		code, errs := m.leaderAndISR(r)
		w.Write(wire.AppendPartitionErrorsResponse(nil, code, errs))
	case wire.RequestStopReplica:
		r, err := wire.DecodeStopReplicaRequest(frame)
		if err != nil {
			return err
		}
		code, errs := m.stopReplica(r)
		w.Write(wire.AppendPartitionErrorsResponse(nil, code, errs))
	case wire.RequestMetadata:
		r, err := wire.DecodeMetadataRequest(frame)
		if err != nil {
			return err
		}
		md, err := m.metadata(r)
		if err != nil {
			m.log.Warn("metadata", "err", err)
			w.Write(wire.AppendErrorResponse(nil, wire.CodeOf(err)))
		} else {
			w.Write(wire.AppendMetadataResponse(nil, md))
		}
	default:
		return fmt.Errorf("%w: replication layer has no handler for %v", wire.ErrMalformedRequest, t)
	}
	return w.Flush()
}

// leaderAndISR applies a controller's order (0.8's becomeLeaderOrFollower)
// once checked against ZooKeeper (validate.go): an order not from the
// registered controller in ZooKeeper's controller epoch is refused as a
// whole; each partition's is refused if it contradicts ZooKeeper's state
// and assignment, and left alone if ZooKeeper has moved past it or its
// leader epoch is not newer than this broker's.
func (m *Manager) leaderAndISR(r *wire.LeaderAndISRRequest) (wire.ErrorCode, []wire.PartitionError) {
	if err := m.checkController(r.ControllerID, r.ControllerEpoch); err != nil {
		m.log.Warn("refusing an order", "controller", r.ControllerID, "epoch", r.ControllerEpoch, "err", err)
		return wire.CodeOf(err), nil
	}
	addrs := make(map[BrokerID]string)
	for _, e := range r.Leaders {
		addrs[BrokerID(e.ID)] = fmt.Sprintf("%s:%d", e.Host, e.Port)
	}
	var out []wire.PartitionError
	for _, pl := range r.Partitions {
		code := m.applyLeader(r.ControllerEpoch, pl, addrs)
		out = append(out, wire.PartitionError{Topic: pl.Topic, Partition: pl.Partition, Code: code})
	}
	return wire.CodeNone, out
}

func (m *Manager) applyLeader(controllerEpoch int32, pl wire.PartitionLeader, addrs map[BrokerID]string) wire.ErrorCode {
	me := m.cfg.BrokerID
	zs, err := m.checkOrder(pl)
	if err != nil {
		m.log.Warn("refusing an order", "topic", pl.Topic, "partition", pl.Partition, "epoch", pl.LeaderEpoch, "err", err)
		return wire.CodeOf(err)
	}
	if zs.stale {
		m.log.Warn("ignoring an order ZooKeeper's state has overtaken", "topic", pl.Topic, "partition", pl.Partition, "epoch", pl.LeaderEpoch)
		return wire.CodeFencedLeaderEpoch
	}
	if BrokerID(pl.Leader) == me {
		if err := m.checkLeadable(pl, zs); err != nil {
			m.log.Warn("refusing to lead", "topic", pl.Topic, "partition", pl.Partition, "epoch", pl.LeaderEpoch, "err", err)
			return wire.CodeOf(err)
		}
	}
	replicas := zs.replicas
	pl.ZkVersion = zs.version
	m.mu.Lock()
	m.replicated[pl.Topic] = true
	m.mu.Unlock()
	p, err := m.openOrCreate(pl.Topic, pl.Partition)
	if err != nil {
		m.log.Error("opening a replica", "topic", pl.Topic, "partition", pl.Partition, "err", err)
		return wire.CodeOf(err)
	}
	p.transition.Lock()
	defer p.transition.Unlock()
	// Rule 3: no append that passed its leader check is in flight while
	// the role changes (and none starts before the new role is set).
	p.appending.Lock()
	defer p.appending.Unlock()
	p.mu.Lock()
	if p.leaderEpoch >= pl.LeaderEpoch {
		p.mu.Unlock()
		return wire.CodeFencedLeaderEpoch
	}
	if lead := p.lead; BrokerID(pl.Leader) == me && lead != nil && !lead.Fenced() {
		// Rule 8: a new epoch that keeps this leader does not fail the
		// requests waiting for the HW; the leadership goes on.
		leo := p.log.WrittenEnd()
		if err := p.epochs.Assign(pl.LeaderEpoch, leo); err != nil {
			p.mu.Unlock()
			return m.abdicate(p, err)
		}
		lead.Continue(LeaderConfig{ID: me, Replicas: replicas, ISR: slices.Clone(pl.ISR), Epoch: pl.LeaderEpoch,
			EpochStart: leo, LEO: leo, Now: m.cfg.Now()})
		p.leaderEpoch, p.replicas, p.controllerEpoch, p.zkVersion = pl.LeaderEpoch, replicas, controllerEpoch, pl.ZkVersion
		p.mu.Unlock()
		m.log.Info("still leading in a new epoch", "partition", p.partKey.String(), "epoch", pl.LeaderEpoch, "isr", pl.ISR)
		return wire.CodeNone
	}
	old, oldLead := p.fetch, p.lead
	p.fetch, p.lead, p.suspended = nil, nil, nil
	if oldLead != nil {
		p.hw = oldLead.HW()
		oldLead.Fence()
	}
	p.mu.Unlock()
	if old != nil {
		old.halt() // before the log end is read or assigned below
	}
	leader := BrokerID(pl.Leader)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leaderEpoch, p.leader, p.replicas = pl.LeaderEpoch, leader, replicas
	p.controllerEpoch, p.zkVersion = controllerEpoch, pl.ZkVersion
	switch {
	case leader == me:
		leo := p.log.WrittenEnd()
		if err := p.epochs.Assign(pl.LeaderEpoch, leo); err != nil {
			return m.abdicate(p, err)
		}
		p.lead = NewLeaderState(LeaderConfig{ID: me, Replicas: replicas, ISR: slices.Clone(pl.ISR),
			Epoch: pl.LeaderEpoch, EpochStart: leo, LEO: leo, HW: p.hw, LagTime: m.cfg.LagTime, Now: m.cfg.Now()})
		m.log.Info("leading", "partition", p.partKey.String(), "epoch", pl.LeaderEpoch, "isr", pl.ISR, "leo", leo, "hw", p.hw)
	case leader >= 0:
		addr, ok := addrs[leader]
		if !ok {
			m.log.Error("order names a leader without an address", "partition", p.partKey.String(), "leader", leader)
			return wire.CodeLeaderNotAvailable
		}
		p.fetch = m.startFetcher(p, leader, addr, pl.LeaderEpoch)
		m.log.Info("following", "partition", p.partKey.String(), "leader", leader, "epoch", pl.LeaderEpoch)
	default:
		m.log.Warn("partition offline: no leader", "partition", p.partKey.String(), "epoch", pl.LeaderEpoch)
	}
	return wire.CodeNone
}

// stopReplica stops following or leading partitions and, with Delete,
// removes their logs and replication files (0.8.2's StopReplica with
// deletePartition, sent to the replicas a reassignment dropped).
func (m *Manager) stopReplica(r *wire.StopReplicaRequest) (wire.ErrorCode, []wire.PartitionError) {
	if err := m.checkController(r.ControllerID, r.ControllerEpoch); err != nil {
		m.log.Warn("refusing a STOP_REPLICA", "controller", r.ControllerID, "epoch", r.ControllerEpoch, "err", err)
		return wire.CodeOf(err), nil
	}
	var out []wire.PartitionError
	for _, tp := range r.Partitions {
		code := wire.CodeNone
		if err := m.checkStop(tp); err != nil {
			m.log.Warn("refusing a STOP_REPLICA", "partition", fmt.Sprintf("%s-%d", tp.Topic, tp.Partition), "err", err)
			out = append(out, wire.PartitionError{Topic: tp.Topic, Partition: tp.Partition, Code: wire.CodeOf(err)})
			continue
		}
		if p := m.partition(tp.Topic, tp.Partition); p != nil {
			p.transition.Lock()
			p.appending.Lock()
			p.mu.Lock()
			f, lead := p.fetch, p.lead
			p.fetch, p.lead, p.suspended = nil, nil, nil
			if lead != nil {
				p.hw = lead.HW()
				lead.Fence()
			}
			p.mu.Unlock()
			p.appending.Unlock()
			if f != nil {
				f.halt()
			}
			if r.Delete {
				code = m.deletePartition(p)
			}
			p.transition.Unlock()
		} else if r.Delete {
			// A log this layer has not opened (the broker restarted
			// since): remove it all the same.
			code = wire.CodeOf(m.cfg.Logs.Delete(tp.Topic, tp.Partition))
		} else {
			code = wire.CodeWrongPartition
		}
		out = append(out, wire.PartitionError{Topic: tp.Topic, Partition: tp.Partition, Code: code})
	}
	return wire.CodeNone, out
}

// deletePartition forgets a stopped partition and deletes its directory
// (segments, leader-epoch and high-watermark files); the caller holds
// p.transition.
func (m *Manager) deletePartition(p *partition) wire.ErrorCode {
	m.mu.Lock()
	if m.parts[p.partKey] == p {
		delete(m.parts, p.partKey)
	}
	m.mu.Unlock()
	p.mu.Lock()
	p.deleted = true
	p.mu.Unlock()
	if err := m.cfg.Logs.Delete(p.topic, p.partition); err != nil {
		m.log.Error("deleting a stopped replica", "partition", p.partKey.String(), "err", err)
		return wire.CodeOf(err)
	}
	m.log.Info("stopped replica deleted", "partition", p.partKey.String())
	return wire.CodeNone
}

// checkLeader returns the leader state for a request carrying epoch (-1:
// any), or the code refusing it.
func (m *Manager) checkLeader(topic string, partition wire.Partition, epoch int32) (*partition, *LeaderState, wire.ErrorCode) {
	p := m.partition(topic, partition)
	if p == nil {
		return nil, nil, wire.CodeNotLeaderForPartition
	}
	p.mu.Lock()
	lead, mine := p.lead, p.leaderEpoch
	p.mu.Unlock()
	switch {
	case lead == nil || lead.Fenced():
		return p, nil, wire.CodeNotLeaderForPartition
	case epoch >= 0 && epoch < mine:
		return p, nil, wire.CodeFencedLeaderEpoch
	case epoch > mine:
		m.newerEpochSeen(p, epoch)
		return p, nil, wire.CodeUnknownLeaderEpoch
	}
	return p, lead, wire.CodeNone
}

// replicaFetch serves a follower: it records the follower's LEO (the fetch
// offset), may grow the ISR, holds the fetch up to MaxWaitMs when there is
// nothing new, and sends the bytes from the fetch offset with sendfile.
//
// A fetch offset is checked to be a message boundary only when the leader
// does not know it to be one (LeaderState.Boundary): in the steady state a
// follower fetches where the bytes last sent to it ended, and the check
// (two preads and a CRC) would otherwise be paid on every fetch.
func (m *Manager) replicaFetch(r *wire.ReplicaFetchRequest, w *server.ResponseWriter) error {
	var hdr [wire.ResponseHeaderLen + wire.ReplicaFetchHeaderLen + 12*4]byte
	refuse := func(code wire.ErrorCode) error {
		w.Write(wire.AppendReplicaFetchResponseHeader(hdr[:0], code, -1, -1, nil, 0))
		return w.Flush()
	}
	if r.MaxSize < 0 {
		return refuse(wire.CodeInvalidFetchSize)
	}
	if r.LeaderEpoch < 0 {
		return refuse(wire.CodeFencedLeaderEpoch)
	}
	p, lead, code := m.checkLeader(r.Topic, r.Partition, r.LeaderEpoch)
	if code != wire.CodeNone {
		return refuse(code)
	}
	off := Offset(r.Offset)
	follower := BrokerID(r.ReplicaID)
	leo := p.log.WrittenEnd()
	lead.Appended(leo)
	if off < p.log.StartOffset() || off > leo {
		return refuse(wire.CodeOffsetOutOfRange)
	}
	if !lead.Boundary(follower, off) && !isBoundary(p.log, off) {
		m.log.Warn("replica fetch at a non-boundary", "partition", p.partKey.String(), "replica", r.ReplicaID, "offset", off)
		return refuse(wire.CodeNotMessageBoundary)
	}
	if lead.FollowerFetch(follower, off, m.cfg.Now()) {
		if !m.registered(follower) {
			lead.EndJoin(follower)
		} else {
			m.log.Info("follower caught up; growing ISR", "partition", p.partKey.String(), "follower", follower, "offset", off)
			m.writeISR(p, lead, func(cur []BrokerID) []BrokerID {
				if slices.Contains(cur, follower) {
					return cur
				}
				return append(cur, follower)
			})
		}
	}
	if off == leo && r.MaxWaitMs > 0 {
		// Long poll (replica.fetch.wait.max.ms): wait for the next append
		// rather than answer empty and be asked again at once.
		data := p.dataWait()
		if p.log.WrittenEnd() == leo {
			m.stats.fetchWaits.Add(1)
			t := time.NewTimer(time.Duration(r.MaxWaitMs) * time.Millisecond)
			select {
			case <-data:
			case <-t.C:
			case <-m.runCtx().Done():
			}
			t.Stop()
		}
	}
	region, err := p.log.ReadWrittenAtBoundary(off, int(r.MaxSize))
	if err != nil {
		return refuse(wire.CodeOf(err))
	}
	defer region.Release()
	end := off + Offset(region.Len)
	m.stats.fetches.Add(1)
	m.stats.fetchBytes.Add(uint64(region.Len))
	if region.Len < int64(r.MaxSize) {
		// Not cut by the size: the region ends at the written end or at
		// a segment's end, both message boundaries.
		lead.Sent(follower, end)
	}
	w.Write(wire.AppendReplicaFetchResponseHeader(hdr[:0], wire.CodeNone, lead.HW(), p.log.WrittenEnd(),
		p.epochMarks(off, end), int(region.Len)))
	if err := w.Region(region.File, region.Pos, region.Len); err != nil {
		return err
	}
	return w.Flush()
}

// offsetForLeaderEpoch answers where an epoch ends in the leader's log.
//
// KIP-320: the request carries the epoch of the follower's order; a leader
// of another epoch refuses it (checkLeader), so a follower of a deposed
// leader cannot truncate against its log.
func (m *Manager) offsetForLeaderEpoch(r *wire.OffsetForLeaderEpochRequest) (wire.ErrorCode, int32, Offset) {
	p, _, code := m.checkLeader(r.Topic, r.Partition, r.CurrentLeaderEpoch)
	if code != wire.CodeNone {
		return code, UndefinedEpoch, -1
	}
	e, end := p.epochs.EndOffsetFor(r.LeaderEpoch, p.log.WrittenEnd())
	return wire.CodeNone, e, end
}

// produceAcks appends each part on this leader and answers once each is
// acknowledged at the requested level (request.required.acks): 0 and 1 at
// once, -1 when the HW passes the part's end.
//
// Deviation: 0.8 sends no response to acks=0; here acks=0 is the 0.7
// PRODUCE (no response), and a PRODUCE_ACKS with acks=0 is answered after
// the append like acks=1. An acks=-1 part to a
// partition whose ISR is below min.insync.replicas is refused before
// anything is appended.
func (m *Manager) produceAcks(r *wire.ProduceAcksRequest) []wire.ProduceResult {
	out := make([]wire.ProduceResult, len(r.Parts))
	type wait struct {
		i    int
		lead *LeaderState
		end  Offset
	}
	var waits []wait
	for i, part := range r.Parts {
		res := &out[i]
		res.Topic, res.Partition, res.Offset = part.Topic, part.Partition, -1
		p := m.partition(part.Topic, part.Partition)
		if p == nil {
			if m.isReplicated(part.Topic) {
				res.Code = wire.CodeNotLeaderForPartition // not told about it yet
				continue
			}
			// Not replicated: a plain 0.7 append on this broker.
			res.Code, res.Offset = m.appendUnreplicated(part)
			continue
		}
		lead, release := p.beginAppend()
		if lead == nil {
			res.Code = wire.CodeNotLeaderForPartition
			continue
		}
		if r.Acks == wire.AcksAll && len(lead.ISR()) < m.cfg.MinInsyncReplicas {
			release()
			res.Code = wire.CodeNotEnoughReplicas
			continue
		}
		first, err := p.log.Append(part.Messages)
		if err == nil {
			p.appended()
		}
		release()
		if err != nil {
			res.Code = wire.CodeOf(err)
			continue
		}
		res.Offset = first
		if r.Acks == wire.AcksAll {
			waits = append(waits, wait{i, lead, first + Offset(len(part.Messages))})
		}
	}
	if len(waits) == 0 {
		return out
	}
	timeout := time.Duration(r.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = m.cfg.RequestTimeout
	}
	ctx, cancel := context.WithTimeout(m.runCtx(), timeout)
	defer cancel()
	for _, w := range waits {
		err := w.lead.WaitHW(ctx, w.end)
		switch {
		case errors.Is(err, ErrFenced):
			out[w.i].Code = wire.CodeNotLeaderForPartition
		case err != nil:
			out[w.i].Code = wire.CodeRequestTimedOut
		case len(w.lead.ISR()) < m.cfg.MinInsyncReplicas:
			out[w.i].Code = wire.CodeNotEnoughReplicasAfterAppend
		}
	}
	return out
}

// appendUnreplicated appends a part to a partition the replication layer
// does not manage, as a 0.7 PRODUCE would (the leader is this broker).
func (m *Manager) appendUnreplicated(part wire.ProduceRequest) (wire.ErrorCode, Offset) {
	l, err := m.cfg.Logs.GetOrCreate(part.Topic, part.Partition)
	if err != nil {
		return wire.CodeOf(err), -1
	}
	first, err := l.Append(part.Messages)
	if err != nil {
		return wire.CodeOf(err), -1
	}
	return wire.CodeNone, first
}

// metadata answers from ZooKeeper: the live brokers and, for each topic,
// each partition's leader, epoch, replicas and ISR.
//
// Deviation: 0.8 answers from a metadata cache the controller keeps up to
// date on every broker; reading ZooKeeper per request is simpler and always
// current, and costs a few ZooKeeper reads per metadata request. While
// ZooKeeper cannot be read the answer is LeaderNotAvailable, the retriable
// code 0.8 clients back off on, where 0.8 would answer from its cache.
func (m *Manager) metadata(r *wire.MetadataRequest) (md *wire.MetadataResponse, err error) {
	zk := m.zkConn()
	if zk == nil {
		return nil, wire.ErrLeaderNotAvailable
	}
	defer func() {
		if err != nil && !errors.Is(err, wire.ErrLeaderNotAvailable) {
			err = fmt.Errorf("%w: reading ZooKeeper: %w", wire.ErrLeaderNotAvailable, err)
		}
	}()
	live, err := zkcoord.RegistryOn(zk).Brokers(false)
	if err != nil {
		return nil, err
	}
	out := &wire.MetadataResponse{}
	for _, id := range sortedIDs(live) {
		out.Brokers = append(out.Brokers, live[id].Broker)
	}
	topics := r.Topics
	if len(topics) == 0 {
		all, err := zkcoord.ReplicationOn(zk).ReplicatedTopics()
		if err != nil {
			return nil, err
		}
		for t := range all {
			topics = append(topics, t)
		}
		sortStrings(topics)
	}
	for _, t := range topics {
		tm := wire.TopicMetadata{Topic: t}
		a, ok, err := zkcoord.ReplicationOn(zk).TopicAssignment(t)
		if err != nil && !errors.Is(err, zkcoord.ErrNoNode) {
			return nil, err
		}
		if !ok {
			tm.Code = wire.CodeWrongPartition
			out.Topics = append(out.Topics, tm)
			continue
		}
		for _, pn := range a.Partitions() {
			pm := wire.PartitionMetadata{Partition: pn, Leader: -1, Replicas: slices.Clone(a[pn])}
			st, _, ok, err := zkcoord.ReplicationOn(zk).PartitionStateOf(t, pn)
			if err != nil {
				return nil, err
			}
			if ok {
				pm.Leader, pm.LeaderEpoch, pm.ISR = st.Leader, st.LeaderEpoch, slices.Clone(st.ISR)
			}
			if _, up := live[pm.Leader]; !ok || pm.Leader < 0 || !up {
				pm.Code = wire.CodeLeaderNotAvailable
			}
			tm.Partitions = append(tm.Partitions, pm)
		}
		out.Topics = append(out.Topics, tm)
	}
	return out, nil
}
