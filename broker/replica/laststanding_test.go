package replica

import (
	"slices"
	"testing"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// TestRestartedLeaderWaitsForTheISRMemberThatDidNot: the ISR is [L F]; F
// dies and, before any controller acts on it, L loses its unflushed log
// and restarts. L is the only live member of the ISR, but it restarted
// since the partition's state was written, so its log may have lost what
// F still holds: the controller must not elect it. The partition goes
// offline with F alone in the ISR (L out of it: an offline state written
// after L's restart would otherwise make L look like a member that never
// restarted), and when F returns it leads, L copies the log back from it,
// and nothing acknowledged with acks=-1 is lost.
//
// The soak's compound seed 178 (3 December) lost 810 acknowledged writes
// so: faults-1's leader broker 2 lost power 0.5 s after its only other ISR
// member, broker 1 (also the controller), was killed; broker 2 restarted,
// became controller, found itself restarted and the only live member of
// ISR [2 1], and elected itself in a new epoch with ISR [2]; broker 1
// returned and truncated 1,011,352 bytes to it. Before the fix this test
// failed waiting for "the partition offline with F alone in the ISR": L
// led epoch 2 with ISR [L] and an empty log.
//
// Only L runs a controller candidate (the others are passive, as in the
// KIP-380 test), and it is cut from ZooKeeper before F stops, so no
// controller sees F go before L's restart.
func TestRestartedLeaderWaitsForTheISRMemberThatDidNot(t *testing.T) {
	c := startClusterPassive(t, 3, func(id int, cfg *broker.Config, rc *Config) { rc.MinInsyncReplicas = 2 }, 1, 2)
	const topic = "lrs"
	c.createTopic(topic, zkcoord.Assignment{0: {0, 1, 2}})
	if l := c.waitLeader(topic, 0, 3); l != 0 {
		t.Fatalf("broker %d leads; the schedule needs the preferred replica 0, the only controller candidate, to lead", l)
	}
	// G (broker 2) leaves for good; the controller drops it: ISR [L F].
	c.stop(2)
	const L, F = BrokerID(0), BrokerID(1)
	c.waitLeader(topic, 0, 2)
	sets, acked := variedSets(91, "a", 20)
	produceAll(t, c.brokers[L].b.Addr, topic, 0, wire.AcksAll, sets, "with ISR [L F]")
	before, _ := c.state(topic, 0)

	// The only controller is cut off; F stops; L crashes and loses its log.
	dirF := c.dirOf(F)
	dirL := c.crashUnseen(L, topic, before, func() { c.stop(F) })

	// L restarts, the only live member of the ISR and the only controller.
	c.restart(L, dirL)
	var st zkcoord.PartitionState
	wait.Within(t, clusterTimeout, "the partition offline with F alone in the ISR", func() bool {
		var ok bool
		st, ok = c.state(topic, 0)
		return ok && st.Leader == wire.NoBroker && slices.Equal(st.ISR, []BrokerID{F})
	})

	// F returns and leads; L follows and copies the log back.
	c.restart(F, dirF)
	if l := c.waitLeader(topic, 0, 2); l != F {
		t.Fatalf("broker %d leads after F returned, want F (%d)", l, F)
	}
	more, also := variedSets(92, "b", 10)
	produceAll(t, c.brokers[F].b.Addr, topic, 0, wire.AcksAll, more, "acks=-1 after F returned")
	acked = append(acked, also...)
	c.checkStrongISR(topic, 0)
	consumeAll(t, c.brokers[F].b.Addr, topic, 0, acked)
}
