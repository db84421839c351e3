package faults

import (
	"context"
	"fmt"
)

// Partial partitions (issue 23).
const (
	// Oneway is a one-way partition: the target broker (leader, follower or
	// controller of partition 0, drawn) still receives from the other
	// brokers, but nothing it sends them leaves (iptables OUTPUT rules in
	// its host only). TCP needs both ways, so no connection with them
	// works, but the other side sees its packets go out and nothing back:
	// a leader's followers fetch into the void, a follower's fetches never
	// reach the leader. ZooKeeper and the clients still reach it.
	Oneway = "oneway"
	// ZKCutController cuts ZooKeeper off from the controller alone (both
	// ways, iptables in the controller's host): its session expires, a
	// new controller is elected, and the old one, still reached by the
	// other brokers and the clients, must not give orders that count.
	ZKCutController = "zk-cut-controller"
	// ZKCutBroker cuts ZooKeeper off from one broker alone, not the
	// controller (partition 0's leader when it is not the controller):
	// its registration expires and the controller moves its leaderships
	// while it still serves clients.
	ZKCutBroker = "zk-cut-broker"
)

// partial applies Oneway, ZKCutController or ZKCutBroker to f.Broker; the heal
// removes its rules.
func (t *trial) partial(ctx context.Context, f Fault) (heal func(context.Context) error, err error) {
	cl := t.cl
	b := f.Broker
	host := brokerHost(b)
	fw := cl.firewall()
	heal = fw.Heal
	switch f.Kind {
	case Oneway:
		var to []string
		for i := 1; i <= t.cfg.Brokers; i++ {
			if i != b {
				to = append(to, brokerHost(i))
			}
		}
		if err := fw.Refuse(ctx, host, to); err != nil {
			return heal, err
		}
	case ZKCutController, ZKCutBroker:
		if err := fw.Isolate(ctx, host, cl.ZKHosts()); err != nil {
			return heal, err
		}
	default:
		return heal, fmt.Errorf("faults: %s is not a partial partition", f.Kind)
	}
	return heal, nil
}

// notController is b, or the next broker when b is the controller
// (ZKCutBroker strikes a broker that is not).
func (t *trial) notController(b int) int {
	if c, err := t.cl.Controller(); err == nil && c == b {
		n := b%t.cfg.Brokers + 1
		t.note("%s: broker%d is the controller; broker%d is cut instead", ZKCutBroker, b, n)
		return n
	}
	return b
}
