package controller

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/netdb11/kafka/broker/replica/peer"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// sender delivers the controller's orders to one broker on a goroutine of
// its own, one request at a time, those made while one is in flight going
// together in the next (TestSenderMergesWaitingOrders): 0.8's
// ControllerChannelManager,
// which keeps a queue and a RequestSendThread per live broker
// (ControllerChannelManager.scala, addBroker/removeBroker/sendRequest), so
// that the controller only enqueues and never waits for a broker to answer.
// A broker that does not answer (stopped, or behind a host that drops its
// packets) holds up only its own sender, for at most the client's timeout
// per order; the controller goes on reacting to ZooKeeper. The controller
// closes a sender when its broker leaves /brokers/ids (0.8's BrokerChange
// listener calls removeBroker), which abandons the order in flight.
//
// Deviation: 0.8 queues each request (up to controller.message.queue.size);
// here orders waiting for one broker merge, the latest state of a
// partition replacing an older one (a LEADER_AND_ISR and a STOP_REPLICA for
// the same partition replace each other too), so a broker that stops
// answering for minutes is sent one order with the latest state when it
// answers again, not every order made meanwhile. And 0.8.0's addBroker
// connects to the broker on the controller's own thread (a blocking connect
// of up to controller.socket.timeout.ms); here, as in 0.8.2's
// RequestSendThread, the sender connects.
type sender struct {
	id   wire.BrokerID
	addr string
	cl   *peer.Client
	log  *slog.Logger
	// controller and results are the controller's id and where each
	// delivery's outcome goes (read by the controller's loop).
	controller wire.BrokerID
	results    chan<- delivery

	mu        sync.Mutex
	epoch     int32                                        // controller epoch of the latest orders; guarded by mu
	leaders   map[wire.TopicPartition]wire.PartitionLeader // LEADER_AND_ISR orders not yet sent; guarded by mu
	stops     map[wire.TopicPartition]bool                 // STOP_REPLICA (delete) orders not yet sent; guarded by mu
	endpoints map[wire.BrokerID]wire.Broker                // the latest address of each leader named; guarded by mu
	wake      chan struct{}                                // poked (cap 1) when orders wait
	done      chan struct{}                                // closed by close
	exited    chan struct{}                                // closed when the goroutine has returned
}

// delivery is the outcome of one order sent by a sender.
type delivery struct {
	s  *sender
	ok bool
}

func newSender(id wire.BrokerID, addr string, cl *peer.Client, controller wire.BrokerID, log *slog.Logger, results chan<- delivery) *sender {
	s := &sender{id: id, addr: addr, cl: cl, controller: controller, log: log, results: results,
		leaders: make(map[wire.TopicPartition]wire.PartitionLeader), stops: make(map[wire.TopicPartition]bool),
		endpoints: make(map[wire.BrokerID]wire.Broker),
		wake:      make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{})}
	go s.run()
	return s
}

// enqueue adds orders for the broker, made by the controller of epoch with
// live as its view of the live brokers.
func (s *sender) enqueue(epoch int32, pls []wire.PartitionLeader, stops []wire.TopicPartition, live map[wire.BrokerID]zkcoord.BrokerInfo) {
	if len(pls) == 0 && len(stops) == 0 {
		return
	}
	s.mu.Lock()
	s.epoch = epoch
	for _, pl := range pls {
		tp := wire.TopicPartition{Topic: pl.Topic, Partition: pl.Partition}
		delete(s.stops, tp)
		s.leaders[tp] = pl
		if b, ok := live[pl.Leader]; ok {
			s.endpoints[pl.Leader] = wire.Broker{ID: pl.Leader, Host: b.Host, Port: b.Port}
		}
	}
	for _, tp := range stops {
		delete(s.leaders, tp)
		s.stops[tp] = true
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// take removes the waiting orders and returns them as request frames.
func (s *sender) take() (leaderAndISR, stopReplica []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.leaders) > 0 {
		req := &wire.LeaderAndISRRequest{ControllerID: s.controller, ControllerEpoch: s.epoch}
		tps := make([]wire.TopicPartition, 0, len(s.leaders))
		for tp := range s.leaders {
			tps = append(tps, tp)
		}
		slices.SortFunc(tps, compareTP)
		var named []wire.BrokerID
		for _, tp := range tps {
			pl := s.leaders[tp]
			req.Partitions = append(req.Partitions, pl)
			if !slices.Contains(named, pl.Leader) {
				named = append(named, pl.Leader)
			}
		}
		for _, id := range named {
			if ep, ok := s.endpoints[id]; ok {
				req.Leaders = append(req.Leaders, ep)
			}
		}
		leaderAndISR = wire.AppendLeaderAndISRRequest(nil, req)
		clear(s.leaders)
	}
	if len(s.stops) > 0 {
		req := &wire.StopReplicaRequest{ControllerID: s.controller, ControllerEpoch: s.epoch, Delete: true}
		for tp := range s.stops {
			req.Partitions = append(req.Partitions, tp)
		}
		slices.SortFunc(req.Partitions, compareTP)
		stopReplica = wire.AppendStopReplicaRequest(nil, req)
		clear(s.stops)
	}
	return leaderAndISR, stopReplica
}

func compareTP(a, b wire.TopicPartition) int {
	if a.Topic != b.Topic {
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	}
	return int(a.Partition) - int(b.Partition)
}

// run sends whatever waits, one order at a time, until close. It reports
// each LEADER_AND_ISR's outcome and each failed STOP_REPLICA to the
// controller (a delivered STOP_REPLICA says nothing about the broker's
// LEADER_AND_ISR orders).
func (s *sender) run() {
	defer close(s.exited)
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		lai, stop := s.take()
		if lai != nil && !s.deliver("LEADER_AND_ISR", lai, true) {
			return
		}
		if stop != nil && !s.deliver("STOP_REPLICA", stop, false) {
			return
		}
	}
}

// deliver sends one order and reports its outcome (a success only if
// reportOK); it returns false once the sender is closed.
func (s *sender) deliver(name string, frame []byte, reportOK bool) bool {
	code, body, err := s.cl.RoundTrip(frame, 0)
	ok := err == nil && code == wire.CodeNone
	if ok {
		// A partition the broker could not take (a storage error, a
		// replica it could not open, an order it found at odds with
		// ZooKeeper) makes the order undelivered: the broker gets every
		// order again at the next reconcile (rule 5). FencedLeaderEpoch
		// says it is already at or past the order's epoch.
		errs, derr := wire.DecodePartitionErrorsResponse(body)
		if derr != nil {
			ok, err = false, derr
		}
		for _, pe := range errs {
			if pe.Code != wire.CodeNone && pe.Code != wire.CodeFencedLeaderEpoch {
				ok, code = false, pe.Code
				s.log.Warn("controller: a partition's order not taken", "broker", s.id, "order", name,
					"partition", fmt.Sprintf("%s-%d", pe.Topic, pe.Partition), "code", pe.Code)
			}
		}
	}
	select {
	case <-s.done:
		return false // abandoned: the broker left, or the controller resigned
	default:
	}
	if !ok {
		s.log.Warn("controller: order not delivered", "broker", s.id, "order", name, "code", code, "err", err)
	} else if !reportOK {
		return true
	}
	select {
	case s.results <- delivery{s, ok}:
		return true
	case <-s.done:
		return false
	}
}

// close stops the sender, abandoning an order in flight, and waits for its
// goroutine.
func (s *sender) close() {
	close(s.done)
	s.cl.Close()
	<-s.exited
}
