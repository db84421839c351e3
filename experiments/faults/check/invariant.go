package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Invariant is the anomaly kind of a replication invariant seen broken
// while the trial ran (an invariant event; Monitor).
const Invariant = "invariant"

// TypeInvariant is a replication invariant seen broken while the trial ran:
// Name is the invariant (InvStrongISR, InvHWMonotonic, InvOneLeader),
// Topic and Partition the partition, Broker the replica that breaks it,
// Start when it was seen, Error what is wrong and Sample the sample that
// shows it (a PartitionSample as JSON).
const TypeInvariant = "invariant"

// The invariants of the TLA+ model of Kafka's replication
// (hachikuji/kafka-specification, KafkaReplication.tla) that Monitor checks.
const (
	// InvStrongISR is StrongIsr: every member of the ISR in ZooKeeper holds
	// everything the leader's high watermark covers. Checked on offsets:
	// each ISR member's log end is at or above the leader's HW.
	InvStrongISR = "strong-isr"
	// InvHWMonotonic: the high watermark a leader serves never moves back
	// within its leader epoch (one process of the replica: a restarted
	// broker reads its HW back from its checkpoint). A follower's HW is not
	// held to it: it learns the HW lazily, from the leader's fetch answers
	// (min of that and its own log end, as in Kafka), and a broker that led
	// the epoch before carries its own, higher, HW into the new epoch until
	// the new leader's first answer brings it down (the admin nemesis shows
	// it in its first trial).
	InvHWMonotonic = "hw-monotonic"
	// InvOneLeader: at most one replica appends client data per leader
	// epoch; checked as at most one broker calling itself leader of a
	// partition in one epoch.
	InvOneLeader = "one-leader-per-epoch"
)

// ZKState is a partition's state node in ZooKeeper as the harness read it.
type ZKState struct {
	Leader  int32   `json:"leader"`
	Epoch   int32   `json:"leader_epoch"`
	ISR     []int32 `json:"isr"`
	Version int32   `json:"version"` // the node's data version
	// Written is the zxid of the node's last write (0 in samples taken
	// before 4 December).
	Written int64 `json:"written,omitempty"`
}

// ReplicaSample is one broker's view of a partition, from its admin
// endpoint (broker/replica.PartitionInfo).
type ReplicaSample struct {
	Broker int32 `json:"broker"`
	// Pid is the broker's process: a restart starts a new one.
	Pid    int    `json:"pid"`
	Role   string `json:"role"`
	Leader int32  `json:"leader"`
	Epoch  int32  `json:"leader_epoch"`
	HW     int64  `json:"hw"`
	LogEnd int64  `json:"log_end"`
	Start  int64  `json:"log_start"`
	// Registered is the zxid that created this process's registration in
	// ZooKeeper (its broker epoch, KIP-380) as the harness last saw it; 0
	// when it has not seen one made since the process started.
	Registered int64 `json:"registered,omitempty"`
}

// PartitionSample is one round of polling one partition: ZooKeeper's state,
// then each live replica (the leader named there first), then ZooKeeper's
// state again. Stable says the node's version was the same both times, so
// the ISR and leader held for the whole round.
type PartitionSample struct {
	TP       TP              `json:"tp"`
	At       time.Time       `json:"at"`
	ZK       ZKState         `json:"zk"`
	Stable   bool            `json:"stable"`
	Replicas []ReplicaSample `json:"replicas"`
}

func (s PartitionSample) replica(b int32) (ReplicaSample, bool) {
	i := slices.IndexFunc(s.Replicas, func(r ReplicaSample) bool { return r.Broker == b })
	if i < 0 {
		return ReplicaSample{}, false
	}
	return s.Replicas[i], true
}

// Monitor checks the replication invariants over a trial's samples, in the
// order they were taken. It is not safe for concurrent use.
type Monitor struct {
	hw      map[hwKey]int64
	leaders map[epochKey]int32
	seen    map[string]bool // violations reported: one per invariant, broker and epoch
}

type hwKey struct {
	tp     TP
	broker int32
	pid    int
	epoch  int32
}

type epochKey struct {
	tp    TP
	epoch int32
}

// NewMonitor returns a Monitor that has seen nothing.
func NewMonitor() *Monitor {
	return &Monitor{hw: map[hwKey]int64{}, leaders: map[epochKey]int32{}, seen: map[string]bool{}}
}

// Observe checks one sample and returns an invariant event for each
// invariant it shows broken (each invariant is reported once per partition,
// broker and leader epoch, with the first sample that shows it).
func (m *Monitor) Observe(s PartitionSample) []Event {
	var out []Event
	report := func(inv string, b, epoch int32, unacted bool, format string, args ...any) {
		k := fmt.Sprintf("%s/%s/%d/%d", inv, s.TP, b, epoch)
		if m.seen[k] {
			return
		}
		m.seen[k] = true
		sample, _ := json.Marshal(s) // plain data: cannot fail
		out = append(out, Event{Type: TypeInvariant, Name: inv, Topic: s.TP.Topic, Partition: s.TP.Partition,
			Broker: b, Start: s.At, Error: fmt.Sprintf(format, args...), Sample: string(sample),
			Unacted: unacted})
	}
	for _, r := range s.Replicas {
		if r.Role == "leader" {
			k := hwKey{s.TP, r.Broker, r.Pid, r.Epoch}
			if last, ok := m.hw[k]; ok && r.HW < last {
				report(InvHWMonotonic, r.Broker, r.Epoch, false, "leader broker %d moved its high watermark back from %d to %d in leader epoch %d",
					r.Broker, last, r.HW, r.Epoch)
			}
			m.hw[k] = max(m.hw[k], r.HW)
			ek := epochKey{s.TP, r.Epoch}
			if l, ok := m.leaders[ek]; !ok {
				m.leaders[ek] = r.Broker
			} else if l != r.Broker {
				report(InvOneLeader, r.Broker, r.Epoch, false, "brokers %d and %d both lead leader epoch %d", l, r.Broker, r.Epoch)
			}
		}
	}
	if !s.Stable || s.ZK.Leader < 0 {
		return out
	}
	lead, ok := s.replica(s.ZK.Leader)
	if !ok || lead.Role != "leader" || lead.Epoch != s.ZK.Epoch {
		return out // the leader ZooKeeper names has not taken over yet (or is down)
	}
	for _, b := range s.ZK.ISR {
		if b == lead.Broker {
			continue
		}
		r, ok := s.replica(b)
		if ok && r.LogEnd < lead.HW {
			// The state was written before this process registered (or it
			// has not registered yet): no controller has acted on its
			// restart, and its ISR membership is its previous process's.
			unacted := r.Registered == 0 || s.ZK.Written < r.Registered
			report(InvStrongISR, b, s.ZK.Epoch, unacted, "broker %d is in the ISR %v of leader epoch %d but its log ends at %d, below the leader's (broker %d) high watermark %d",
				b, s.ZK.ISR, s.ZK.Epoch, r.LogEnd, lead.Broker, lead.HW)
		}
	}
	return out
}

// invariantAnomalies turns invariant events into anomalies. The model
// assumes no replica forgets what it wrote, so two are not promised: one
// seen after a power loss everywhere struck its partition (a cut event with
// Everywhere), and a strong-isr by a replica whose own copy a power loss
// cut, seen before any controller acted on its restart (Unacted): its
// membership in ZooKeeper's ISR dates from before it lost its tail, and
// what `safe` promises there is that it is neither elected over a member
// that did not restart nor counted for acks=-1 until it has the bytes again.
func invariantAnomalies(invs, cuts []Event) []Anomaly {
	var out []Anomaly
	for _, e := range invs {
		tp := TP{e.Topic, e.Partition}
		a := Anomaly{Kind: Invariant, TP: tp, Detail: e.Name + ": " + e.Error}
		for _, c := range cuts {
			if (TP{c.Topic, c.Partition}) != tp || e.Start.Before(c.Start) {
				continue
			}
			if c.Everywhere || (e.Name == InvStrongISR && e.Unacted && c.Broker == e.Broker) {
				a.Unpromised = true
			}
		}
		if e.Unacted && !a.Unpromised {
			a.Detail += " (restarted; no controller had acted on it yet)"
		}
		out = append(out, a)
	}
	return out
}
