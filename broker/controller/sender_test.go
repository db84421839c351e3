package controller

import (
	"reflect"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// TestSenderMergesWaitingOrders: orders waiting for one broker merge by
// partition, the latest state winning, and a LEADER_AND_ISR and a
// STOP_REPLICA for the same partition replace each other; what is taken
// is sent as one request of each kind, with the latest controller epoch
// and the addresses of the leaders named.
func TestSenderMergesWaitingOrders(t *testing.T) {
	s := &sender{id: 2, controller: 7, leaders: make(map[wire.TopicPartition]wire.PartitionLeader),
		stops: make(map[wire.TopicPartition]bool), endpoints: make(map[wire.BrokerID]wire.Broker), wake: make(chan struct{}, 1)}
	live := map[wire.BrokerID]zkcoord.BrokerInfo{
		0: zkcoord.NewBrokerInfo(0, "h0", 9000, time.Unix(1, 0)),
		1: zkcoord.NewBrokerInfo(1, "h1", 9001, time.Unix(1, 0)),
		2: zkcoord.NewBrokerInfo(2, "h2", 9002, time.Unix(1, 0)),
	}
	pl := func(topic string, p wire.Partition, leader wire.BrokerID, epoch int32) wire.PartitionLeader {
		return wire.PartitionLeader{Topic: topic, Partition: p, Leader: leader, LeaderEpoch: epoch, ISR: []wire.BrokerID{leader}, Replicas: []wire.BrokerID{0, 1, 2}}
	}
	s.enqueue(3, []wire.PartitionLeader{pl("b", 0, 0, 1), pl("a", 1, 0, 1), pl("a", 2, 1, 4)}, nil, live)
	s.enqueue(3, []wire.PartitionLeader{pl("b", 0, 1, 2)}, []wire.TopicPartition{{Topic: "a", Partition: 2}}, live)
	s.enqueue(4, nil, []wire.TopicPartition{{Topic: "c", Partition: 0}}, live)
	s.enqueue(4, []wire.PartitionLeader{pl("c", 0, 2, 9)}, nil, live)

	lai, stop := s.take()
	r, err := wire.DecodeLeaderAndISRRequest(lai[4:])
	if err != nil {
		t.Fatal(err)
	}
	want := &wire.LeaderAndISRRequest{ControllerID: 7, ControllerEpoch: 4,
		Partitions: []wire.PartitionLeader{pl("a", 1, 0, 1), pl("b", 0, 1, 2), pl("c", 0, 2, 9)},
		Leaders:    []wire.Broker{{ID: 0, Host: "h0", Port: 9000}, {ID: 1, Host: "h1", Port: 9001}, {ID: 2, Host: "h2", Port: 9002}}}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("LEADER_AND_ISR taken:\n%+v\nwant\n%+v", r, want)
	}
	sr, err := wire.DecodeStopReplicaRequest(stop[4:])
	if err != nil {
		t.Fatal(err)
	}
	if want := (&wire.StopReplicaRequest{ControllerID: 7, ControllerEpoch: 4, Delete: true, Partitions: []wire.TopicPartition{{Topic: "a", Partition: 2}}}); !reflect.DeepEqual(sr, want) {
		t.Fatalf("STOP_REPLICA taken: %+v, want %+v", sr, want)
	}
	if lai, stop := s.take(); lai != nil || stop != nil {
		t.Fatalf("second take = %d, %d bytes, want nothing", len(lai), len(stop))
	}
}

// TestFailedDeliveryKeepsTheBrokerStale: a broker whose orders failed gets
// every order at the next reconcile, even when a later delivery to it (of
// only the orders made since) succeeded first; a delivery by a sender the
// controller has replaced changes nothing. Before this test a success
// cleared the mark (the soak's seed 49, pass 11).
func TestFailedDeliveryKeepsTheBrokerStale(t *testing.T) {
	s, old := &sender{id: 1}, &sender{id: 1}
	c := &Controller{stale: make(map[wire.BrokerID]bool), senders: map[wire.BrokerID]*sender{1: s}}
	c.delivered(delivery{s: s, ok: false})
	c.delivered(delivery{s: s, ok: true})
	if !c.stale[1] {
		t.Error("a success after a failure cleared the broker's mark")
	}
	delete(c.stale, 1) // the reconcile that sent everything
	c.delivered(delivery{s: old, ok: false})
	if c.stale[1] {
		t.Error("a replaced sender's failure marked the broker")
	}
}
