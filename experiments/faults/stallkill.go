package faults

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/netdb11/kafka/experiments/faults/check"
)

// stallAcks is how many messages of partition 0, sent after the followers
// were cut from the leader's port and acknowledged, the stall-kill nemesis
// waits for before the kill (ten batches of the default workload).
const stallAcks = 100

// stallKill applies the StallKill nemesis to partition 0, whose leader is
// f.Broker: acks=1's loss under a leader kill, made deterministic. Every
// other broker (the followers) loses its connections to the leader's port
// in both directions (iptables in the follower's host: nothing it sends
// to that port leaves, nothing from that port arrives), so no message the
// leader appends from then on can reach a follower. The followers stay
// in the ISR until replica.lag.time.max.ms has passed without their
// catching up; the kill comes before half of it: as soon as the workload
// holds stallAcks acknowledged messages of partition 0 sent after the cut
// (acks=1: the leader alone acknowledges), or at three quarters of the lag time when
// none come (acks=all waits for the followers and times out). The
// controller then elects, cleanly, a follower that lacks every one of
// them. Healed: the followers' rules removed, the leader restarted (it
// truncates to the new leader).
func (t *trial) stallKill(ctx context.Context, f Fault) (heal func(context.Context) error, err error) {
	cl := t.cl
	leader := f.Broker
	var followers []string
	for i := 1; i <= t.cfg.Brokers; i++ {
		if i != leader {
			followers = append(followers, brokerHost(i))
		}
	}
	fw := cl.firewall()
	heal = func(ctx context.Context) error {
		return errors.Join(fw.Heal(ctx), cl.StartBroker(ctx, leader))
	}
	cut := time.Now()
	for _, h := range followers {
		for _, port := range []int{brokerPort, replicaPort} {
			if err := fw.CutPort(ctx, h, brokerHost(leader), port); err != nil {
				return heal, err
			}
		}
	}
	// Sends that started after every rule was in place: appended after it,
	// so on the leader alone.
	blocked := time.Now()
	// Three quarters of the lag time: the leader drops the followers a
	// lag time after they last caught up (at the cut) at its next check,
	// so they are surely in the ISR until then; a loaded machine (make
	// test under -race) has been seen to acknowledge nothing in half of it.
	deadline := cut.Add(t.cfg.LagTime * 3 / 4)
	acked := 0
	for time.Now().Before(deadline) {
		if acked = t.w.ackedSince(check.TP{Topic: topic, Partition: 0}, blocked); acked >= stallAcks {
			break
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return heal, err
		}
	}
	// The partition's ISR in ZooKeeper (the leader's metadata answer reads
	// it there), read just before the kill: what the controller will elect
	// from; the followers must still be in it.
	isr := "unknown"
	if pm, err := cl.partitionInfoFrom(ctx, leader, topic, 0); err == nil {
		var ids []int
		for _, r := range pm.ISR {
			ids = append(ids, int(r))
		}
		slices.Sort(ids)
		isr = ""
		for i, id := range ids {
			if i > 0 {
				isr += ","
			}
			isr += strconv.Itoa(id)
		}
	}
	if err := cl.StopBroker(ctx, leader, true); err != nil {
		return heal, err
	}
	t.note("%s: followers cut from the leader's port; leader killed %v later with ISR [%s] and %d messages acknowledged after the cut",
		f, time.Since(cut).Round(time.Millisecond), isr, acked)
	return heal, nil
}

// ackedSince counts tp's sends that started after since and were
// acknowledged.
func (w *workload) ackedSince(tp check.TP, since time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for i := len(w.order) - 1; i >= 0; i-- {
		e := w.sends[w.order[i]]
		if e.Start.Before(since) {
			if e.Topic == tp.Topic && e.Partition == tp.Partition {
				break
			}
			continue
		}
		if e.Topic == tp.Topic && e.Partition == tp.Partition && e.Outcome == check.OK {
			n++
		}
	}
	return n
}
