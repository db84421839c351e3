package replica

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// TestRestartedLeaderWaitsForTheISRMemberThatDidNot: the ISR is [L F]; F
// dies and, before any controller acts on it, L loses its unflushed log
// and restarts. L is the only live member of the ISR, but it restarted
// after a crash (its log ends say recovered), so its log may have lost
// what F still holds: the controller must not elect it. The partition
// goes offline with the ISR kept whole, and when F returns the longer log
// leads, L copies the log back from it, and nothing acknowledged with
// acks=-1 is lost.
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
	const topic = "lrs"
	c, acked, before := startISRLF(t, topic, 91, 1, 2)

	// The only controller is cut off; F stops; L crashes and loses its log.
	dirF := c.dirOf(F)
	dirL := c.crashUnseen(L, topic, before, func() { c.stop(F) })

	// L restarts, the only live member of the ISR and the only controller.
	c.restart(L, dirL)
	waitOfflineWhole(t, c, topic)

	// F returns and leads; L follows and copies the log back.
	c.restart(F, dirF)
	fLeadsKeepingAll(t, c, topic, 92, acked)
}

// TestIntactMemberBackFirstLeadsOverTheRecoveredOne is seed 178's
// schedule the other way round: the ISR is [L F]; F crashes keeping its
// log (a SIGKILL: the page cache survives, its log is whole but not
// vouched for), then L, unseen by any controller, loses its unflushed log.
// F returns first and finds L down; L returns last. Both restarted after a
// crash, so neither is known intact: the partition waits offline, its ISR
// kept whole, until both are back, and then the longer log (F's) leads.
//
// The soak's compound seed 398 (3 December) lost 2,250 acknowledged
// writes so under the rule of 8d6185b, which waited only for a member
// that had not restarted: F, back first, was restarted and left the ISR
// while L was awaited; L, back last and the only member, led with its
// short log, and F truncated to it. Before the fix this test failed
// waiting for the offline state with the ISR kept whole (F had been
// dropped from it), and, without that wait, with "broker 0 leads after
// both returned, want F (1)".
//
// Brokers 0 (L) and 1 (F) run controller candidates; G (2) is passive and
// stops first, leaving the ISR [L F].
func TestIntactMemberBackFirstLeadsOverTheRecoveredOne(t *testing.T) {
	const topic = "lrs398"
	c, acked, before := startISRLF(t, topic, 93, 2)

	// L is cut off from ZooKeeper; F crashes keeping its log; L crashes and
	// loses its own. No controller can act in between.
	dirF := c.dirOf(F)
	dirL := c.crashUnseen(L, topic, before, func() {
		c.stop(F)
		unvouch(t, dirF) // a crash, not a clean shutdown: the log is whole but not vouched for
	})

	// F returns first: it restarted after a crash, and L is down.
	c.restart(F, dirF)
	waitOfflineWhole(t, c, topic)
	// L returns last, its log short.
	c.restart(L, dirL)
	fLeadsKeepingAll(t, c, topic, 94, acked)
}

// L and F are the two members of the ISR the last-replica-standing tests
// start from: L = broker 0 leads, F = broker 1 follows.
const L, F = BrokerID(0), BrokerID(1)

// startISRLF starts three brokers (those in passive without a controller
// candidate, min.insync.replicas=2), creates topic with partition 0 on
// all of them, led by the preferred replica L, stops G (broker 2) for good
// so that the ISR is [L F], and writes 20 varied sets from seed with
// acks=-1. It returns the cluster, the acknowledged messages and the
// partition's state after them.
func startISRLF(t *testing.T, topic string, seed uint64, passive ...BrokerID) (*cluster, []string, zkcoord.PartitionState) {
	t.Helper()
	c := startClusterPassive(t, 3, func(id int, cfg *broker.Config, rc *Config) { rc.MinInsyncReplicas = 2 }, passive...)
	c.createTopic(topic, zkcoord.Assignment{0: {0, 1, 2}})
	if l := c.waitLeader(topic, 0, 3); l != L {
		t.Fatalf("broker %d leads; the schedule needs the preferred replica %d to lead", l, L)
	}
	c.stop(2)
	c.waitLeader(topic, 0, 2)
	sets, acked := variedSets(seed, "a", 20)
	produceAll(t, c.brokers[L].b.Addr, topic, 0, wire.AcksAll, sets, "with ISR [L F]")
	before, _ := c.state(topic, 0)
	return c, acked, before
}

// waitOfflineWhole waits for topic's partition 0 to be offline (no
// leader) with its ISR kept whole, [L F].
func waitOfflineWhole(t *testing.T, c *cluster, topic string) {
	t.Helper()
	wait.Within(t, clusterTimeout, "the partition offline with the ISR [L F] kept whole", func() bool {
		st, ok := c.state(topic, 0)
		return ok && st.Leader == wire.NoBroker && slices.Equal(st.ISR, []BrokerID{L, F})
	})
}

// fLeadsKeepingAll checks that F leads once both are back (its log is
// the longer), that acks=-1 writes (10 sets from seed) work again, that
// the ISR members hold the leader's bytes below the HW, and that
// everything acknowledged, acked and these, is read from F.
func fLeadsKeepingAll(t *testing.T, c *cluster, topic string, seed uint64, acked []string) {
	t.Helper()
	if l := c.waitLeader(topic, 0, 2); l != F {
		t.Fatalf("broker %d leads once F is back, want F (%d), whose log is the longer", l, F)
	}
	more, also := variedSets(seed, "b", 10)
	produceAll(t, c.brokers[F].b.Addr, topic, 0, wire.AcksAll, more, "acks=-1 once F is back")
	c.checkStrongISR(topic, 0)
	consumeAll(t, c.brokers[F].b.Addr, topic, 0, append(acked, also...))
}

// unvouch removes the clean-shutdown markers of every log under dir, as
// if its broker had crashed instead of shutting down: the logs are whole,
// but the next open recovers them and reports them Recovered.
func unvouch(t testing.TB, dir string) {
	t.Helper()
	markers, err := filepath.Glob(filepath.Join(dir, "*", log.CleanShutdownFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(markers) == 0 {
		t.Fatalf("no clean-shutdown marker under %s", dir)
	}
	for _, m := range markers {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeadFollowerStaysInAnISRAtMinInsync: the ISR is [L F] with
// min.insync.replicas=2. L loses power unseen (cut from ZooKeeper, its log
// emptied; its registration lives on until the server expires it), then F
// shuts down cleanly, holding everything acknowledged. The controller sees
// F go while L still looks alive. Dropping F would leave the ISR [L], whose
// only member has lost the log: rule 1 drops a dead follower only while
// the ISR keeps min.insync.replicas members, because below that no acks=-1
// write is acknowledged and the dropped follower may be the only holder of
// what was. When L's registration expires the partition goes offline with
// the ISR [L F] kept whole, and once both are back F's longer log leads.
//
// The soak's compound seed 528 (3 December) lost 1,040 acknowledged
// writes so: leader broker 2 lost power, broker 3 was stopped 1 s later,
// the controller dropped 3 from [2 3] before 2's session expired, and 2,
// back alone in the ISR [2], led with its cut log; 3 truncated 1.26 MB to
// it. Before the fix this test failed waiting for the offline state with
// the ISR [L F] kept whole: the controller had written the ISR [L].
//
// Broker 2 is the only controller candidate and holds no replica.
func TestDeadFollowerStaysInAnISRAtMinInsync(t *testing.T) {
	const topic = "min528"
	c := startClusterPassive(t, 3, func(id int, cfg *broker.Config, rc *Config) { rc.MinInsyncReplicas = 2 }, L, F)
	c.createTopic(topic, zkcoord.Assignment{0: {L, F}})
	if l := c.waitLeader(topic, 0, 2); l != L {
		t.Fatalf("broker %d leads; the schedule needs the preferred replica %d to lead", l, L)
	}
	sets, acked := variedSets(97, "a", 20)
	produceAll(t, c.brokers[L].b.Addr, topic, 0, wire.AcksAll, sets, "with ISR [L F]")

	// L loses power unseen: cut from ZooKeeper, stopped, its log emptied.
	nl, dirL := c.brokers[L], c.dirOf(L)
	nl.cutZK()
	if err := nl.b.Stop(); err != nil {
		t.Fatal(err)
	}
	delete(c.brokers, L)
	loseLog(t, dirL, topic, 0)
	// F shuts down cleanly while L's registration lives on.
	dirF := c.dirOf(F)
	c.stop(F)
	wait.Within(t, clusterTimeout, "L's registration to expire", func() bool {
		live, err := zkcoord.RegistryOn(c.zk).Brokers(false)
		_, ok := live[L]
		return err == nil && !ok
	})
	waitOfflineWhole(t, c, topic)

	// L returns with its empty log, then F.
	c.restart(L, dirL)
	c.restart(F, dirF)
	fLeadsKeepingAll(t, c, topic, 98, acked)
}

// TestControllerWritesOnlyInItsOwnEpoch: once a newer controller epoch is
// in /controller_epoch, the controller that held the older one writes no
// partition state; it resigns, and what it writes after campaigning again
// carries an epoch above the newer one. Make faults' split seed 1 (3
// December) went invalid so: the controller, its session expired and
// renewed, finished a reconcile in the new session and dropped a follower
// from faults-1's ISR in a new leader epoch; the leader refused the order
// of a broker that was no longer the controller, the follower refused the
// older order of the real one, and it never followed again. Before the fix
// this test failed: the follower's removal was written in the old
// controller epoch.
//
// Here the test itself plays the newer controller: it bumps the epoch while
// /controller still names the old one, which then takes the role again in
// an epoch of its own.
func TestControllerWritesOnlyInItsOwnEpoch(t *testing.T) {
	const topic = "fence"
	c := startCluster(t, 3, nil)
	c.createTopic(topic, zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader(topic, 0, 3)
	ctrl, ok, err := zkcoord.ElectionOn(c.zk).Controller()
	if err != nil || !ok {
		t.Fatalf("no controller: %v", err)
	}
	newer, _, err := zkcoord.ElectionOn(c.zk).IncrementEpoch()
	if err != nil {
		t.Fatal(err)
	}
	victim := BrokerID(-1)
	for id := range c.brokers {
		if id != leader && id != ctrl {
			victim = id
		}
	}
	if victim < 0 {
		t.Skipf("the controller %d leads: no follower that is neither", ctrl)
	}
	c.stop(victim)
	var st zkcoord.PartitionState
	wait.Within(t, clusterTimeout, "the stopped follower to leave the ISR", func() bool {
		st, _ = c.state(topic, 0)
		return !slices.Contains(st.ISR, victim)
	})
	if st.ControllerEpoch <= newer {
		t.Fatalf("the follower's removal was written in controller epoch %d, at or below the newer epoch %d", st.ControllerEpoch, newer)
	}
}
