package replica

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// reconcileInterval is how often a controller re-reads the whole state even
// without a watch firing (a topic assignment written over an existing 0.7
// topic node fires no watch).
const reconcileInterval = time.Second

// Controller is 0.8's KafkaController, reduced to leader election: every
// broker runs one; the one that creates /controller leads, bumps
// /controller_epoch, and from then on reconciles ZooKeeper's state with the
// live brokers: a new topic's partitions get the first live replica as
// leader; a partition whose leader died gets the first live ISR member,
// a leader epoch one higher and the ISR shrunk to live members, written
// with a conditional write; and every broker concerned gets a
// LEADER_AND_ISR order carrying the controller epoch. With no ISR member
// alive the partition stays offline, unless unclean.leader.election.enable
// lets the first live replica lead, with a warning that acknowledged
// messages may be lost.
//
// Deviation: 0.8's controller runs partition and replica state machines
// driven by each watch; this one re-derives the desired state from
// ZooKeeper on every watch and every reconcileInterval (idempotent, so a
// controller that fails over mid-election simply finishes the work). It
// does not remove a dead follower from the ISR: the leader drops it after
// replica.lag.time.max.ms, as for any lagging follower.
type Controller struct {
	m   *Manager
	cfg Config

	zk      *zkcoord.Conn
	epoch   int32
	live    map[BrokerID]zkcoord.BrokerInfo // as of the last reconcile
	stale   map[BrokerID]bool               // brokers whose last order failed: resend everything
	clients map[BrokerID]*client
}

// Run campaigns for the controller role and acts as controller while it
// holds it, until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	defer c.closeClients()
	for ctx.Err() == nil {
		zk, err := zkcoord.Dial(ctx, c.cfg.ZK)
		if err != nil {
			if !sleepCtx(ctx, c.cfg.Backoff) {
				return
			}
			continue
		}
		c.zk = zk
		c.session(ctx)
		zk.Close()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// session campaigns on one ZooKeeper session; it returns when the session
// expires or ctx ends.
func (c *Controller) session(ctx context.Context) {
	log := c.m.log
	for ctx.Err() == nil {
		won, err := c.zk.ElectController(c.cfg.BrokerID, c.cfg.Now())
		if err != nil {
			log.Warn("controller election", "err", err)
			if errors.Is(err, zkcoord.ErrConnectionLoss) || !sleepCtx(ctx, c.cfg.Backoff) {
				return
			}
			continue
		}
		if won {
			c.lead(ctx)
			return
		}
		if _, ok, err := c.zk.WatchData(zkcoord.ControllerPath); err != nil || !ok {
			continue
		}
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return
			case ev := <-c.zk.Events():
				switch {
				case ev.Type == zkcoord.EventSessionExpired:
					return
				case ev.Path == zkcoord.ControllerPath:
					waiting = false
				}
			}
		}
	}
}

// lead is the controller's life: it returns when the session expires
// (another broker may then be controller) or ctx ends.
func (c *Controller) lead(ctx context.Context) {
	log := c.m.log
	epoch, err := c.zk.IncrementControllerEpoch()
	if err != nil {
		log.Error("controller epoch", "err", err)
		return
	}
	c.epoch, c.live, c.stale = epoch, nil, make(map[BrokerID]bool)
	log.Info("became controller", "controller_epoch", epoch)
	tick := time.NewTicker(reconcileInterval)
	defer tick.Stop()
	for {
		if err := c.reconcile(); err != nil {
			log.Warn("controller reconcile", "err", err)
			if errors.Is(err, zkcoord.ErrConnectionLoss) || errors.Is(err, zkcoord.ErrClosed) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case ev := <-c.zk.Events():
			if ev.Type == zkcoord.EventSessionExpired {
				log.Warn("controller session expired; resigning")
				return
			}
		}
	}
}

// reconcile brings every replicated partition's state in line with the live
// brokers and sends the orders that follow.
func (c *Controller) reconcile() error {
	live, err := c.zk.Brokers(true)
	if err != nil {
		return err
	}
	if _, err := c.zk.Topics(true); err != nil {
		return err
	}
	topics, err := c.zk.ReplicatedTopics()
	if err != nil {
		return err
	}
	// Paper-less 0.8 admin: a preferred replica election asked for through
	// /admin/preferred_replica_election (kafka-preferred-replica-election).
	preferred := make(map[zkcoord.TopicPartition]bool)
	data, electing, err := c.zk.WatchData(zkcoord.PreferredReplicaElectionPath)
	if err != nil {
		return err
	}
	if electing {
		ps, err := zkcoord.ParseElection(data)
		if err != nil {
			c.m.log.Warn("controller: ignoring a bad preferred replica election", "err", err)
		}
		for _, tp := range ps {
			preferred[tp] = true
		}
	}
	fresh := make(map[BrokerID]bool) // brokers that need every order
	for id, info := range live {
		if old, ok := c.live[id]; !ok || old.CreatorID != info.CreatorID || c.stale[id] {
			fresh[id] = true
		}
	}
	orders := make(map[BrokerID][]wire.PartitionLeader)
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	slices.Sort(names)
	for _, t := range names {
		a := topics[t]
		for _, pn := range a.Partitions() {
			pl, changed, err := c.partition(t, pn, a[pn], live, preferred[zkcoord.TopicPartition{Topic: t, Partition: pn}])
			if err != nil {
				c.m.log.Warn("controller: partition", "topic", t, "partition", pn, "err", err)
				continue
			}
			if pl == nil {
				continue
			}
			for _, r := range a[pn] {
				if _, up := live[r]; up && (changed || fresh[r]) {
					orders[r] = append(orders[r], *pl)
				}
			}
		}
	}
	c.live = live
	if electing {
		if err := c.zk.Delete(zkcoord.PreferredReplicaElectionPath); err != nil {
			return err
		}
		c.m.log.Info("controller: preferred replica election done", "partitions", len(preferred))
	}
	// The orders go out in parallel, so that a broker that stopped
	// answering (SIGSTOP, before its session expires) delays no other.
	type result struct {
		id BrokerID
		ok bool
	}
	results := make(chan result, len(orders))
	for id, pls := range orders {
		cl := c.clientFor(id, live[id])
		go func() { results <- result{id, c.send(cl, id, live, pls)} }()
	}
	for range orders {
		r := <-results
		c.stale[r.id] = !r.ok
		if !r.ok {
			c.clients[r.id].close()
			delete(c.clients, r.id)
		}
	}
	for id := range fresh {
		if len(orders[id]) == 0 {
			delete(c.stale, id)
		}
	}
	return nil
}

// partition decides one partition: it returns the order to send (nil if
// none can be made) and whether the state changed.
func (c *Controller) partition(topic string, pn wire.Partition, replicas []BrokerID, live map[BrokerID]zkcoord.BrokerInfo, preferred bool) (*wire.PartitionLeader, bool, error) {
	log := c.m.log
	up := func(r BrokerID) bool { _, ok := live[r]; return ok }
	st, version, ok, err := c.zk.PartitionStateOf(topic, pn)
	if err != nil {
		return nil, false, err
	}
	changed := false
	switch {
	case !ok:
		liveRs := slices.DeleteFunc(slices.Clone(replicas), func(r BrokerID) bool { return !up(r) })
		if len(liveRs) == 0 {
			return nil, false, nil
		}
		st = zkcoord.PartitionState{ControllerEpoch: c.epoch, Leader: liveRs[0], LeaderEpoch: 0, ISR: liveRs}
		if version, err = c.zk.WritePartitionState(topic, pn, st, -1); err != nil {
			return nil, false, err
		}
		changed = true
		log.Info("controller: new partition", "topic", topic, "partition", pn, "leader", st.Leader, "isr", st.ISR)
	case st.Leader < 0 || !up(st.Leader):
		cands := slices.DeleteFunc(slices.Clone(st.ISR), func(r BrokerID) bool { return !up(r) })
		isr := cands
		unclean := false
		if len(cands) == 0 && c.cfg.UncleanElection {
			cands = slices.DeleteFunc(slices.Clone(replicas), func(r BrokerID) bool { return !up(r) })
			if len(cands) > 0 {
				isr, unclean = cands[:1], true
			}
		}
		if len(cands) == 0 {
			if st.Leader >= 0 {
				log.Warn("controller: partition offline: no live ISR member", "topic", topic, "partition", pn, "isr", st.ISR)
			}
			return nil, false, nil
		}
		old := st.Leader
		st = zkcoord.PartitionState{ControllerEpoch: c.epoch, Leader: cands[0], LeaderEpoch: st.LeaderEpoch + 1, ISR: isr}
		if version, err = c.zk.WritePartitionState(topic, pn, st, version); err != nil {
			return nil, false, err // ErrBadVersion: the leader wrote its ISR meanwhile; next round
		}
		changed = true
		if unclean {
			log.Warn("controller: UNCLEAN leader election: an out-of-sync replica leads; acknowledged messages may be lost",
				"topic", topic, "partition", pn, "leader", st.Leader, "epoch", st.LeaderEpoch)
		} else {
			log.Info("controller: elected leader", "topic", topic, "partition", pn, "old", old, "leader", st.Leader,
				"epoch", st.LeaderEpoch, "isr", st.ISR)
		}
	case preferred && st.Leader != replicas[0] && up(replicas[0]) && slices.Contains(st.ISR, replicas[0]):
		// The preferred replica (the first assigned) is alive and in
		// sync: it takes the leadership back (0.8's
		// PreferredReplicaPartitionLeaderSelector).
		old := st.Leader
		st = zkcoord.PartitionState{ControllerEpoch: c.epoch, Leader: replicas[0], LeaderEpoch: st.LeaderEpoch + 1, ISR: st.ISR}
		if version, err = c.zk.WritePartitionState(topic, pn, st, version); err != nil {
			return nil, false, err
		}
		changed = true
		log.Info("controller: preferred replica leads again", "topic", topic, "partition", pn, "old", old,
			"leader", st.Leader, "epoch", st.LeaderEpoch)
	}
	pl := &wire.PartitionLeader{Topic: topic, Partition: pn, Leader: st.Leader, LeaderEpoch: st.LeaderEpoch,
		ZkVersion: version, ISR: slices.Clone(st.ISR), Replicas: slices.Clone(replicas)}
	return pl, changed, nil
}

// clientFor returns the connection to a broker, made anew if its address changed.
func (c *Controller) clientFor(id BrokerID, info zkcoord.BrokerInfo) *client {
	cl := c.clients[id]
	if cl == nil || cl.addr != info.Addr() {
		if cl != nil {
			cl.close()
		}
		if c.clients == nil {
			c.clients = make(map[BrokerID]*client)
		}
		cl = newClient(info.Addr(), c.cfg.RequestTimeout)
		c.clients[id] = cl
	}
	return cl
}

// send delivers a LEADER_AND_ISR order to a broker and reports success.
func (c *Controller) send(cl *client, id BrokerID, live map[BrokerID]zkcoord.BrokerInfo, pls []wire.PartitionLeader) bool {
	req := &wire.LeaderAndISRRequest{ControllerID: c.cfg.BrokerID, ControllerEpoch: c.epoch, Partitions: pls}
	seen := map[BrokerID]bool{}
	for _, pl := range pls {
		if b, ok := live[pl.Leader]; ok && !seen[pl.Leader] {
			seen[pl.Leader] = true
			req.Leaders = append(req.Leaders, wire.BrokerEndpoint{ID: pl.Leader, Host: b.Host, Port: int32(b.Port)})
		}
	}
	code, _, err := cl.roundTrip(wire.AppendLeaderAndISRRequest(nil, req), 0)
	if err != nil || code != wire.CodeNone {
		c.m.log.Warn("controller: order not delivered", "broker", id, "code", code, "err", err)
		return false
	}
	return true
}

func (c *Controller) closeClients() {
	for _, cl := range c.clients {
		cl.close()
	}
}
