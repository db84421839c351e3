package replica

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// Rules 10 and 11 (paper/replication.md), found by the fault suite's soak
// (pass 12, compound seed 669: retention-jump aged every segment of a
// leader whose followers stall-kill had cut off; the leader's retention
// deleted segments no follower held, and, restarted after another replica
// was elected, it had to truncate below its own log start and halted at
// every start).

// uncommittedTail starts three brokers whose topic "r" has a leader holding
// many segments (16 KiB each, retention.size 48 KiB) that no follower has
// fetched: the followers' fetchers wait after their first truncation until
// release is called, and the lag time is long enough that they stay in the
// ISR, so the HW stays at 0 under acks=1 writes.
func uncommittedTail(t *testing.T) (c *cluster, leader BrokerID, release func()) {
	c = startCluster(t, 3, func(id int, cfg *broker.Config, rc *Config) {
		cfg.Log.FileSize = 16 << 10
		cfg.Log.RetentionSize = 48 << 10
		rc.LagTime = 5 * time.Minute
	})
	release = holdAfterTruncation(t, "r")
	c.createTopic("r", zkcoord.Assignment{0: {0, 1, 2}})
	leader = c.waitLeader("r", 0, 3)
	sets, _ := variedSets(10, "r", 60)
	produceAll(t, c.brokers[leader].b.Addr, "r", 0, wire.AcksLeader, sets, "acks=1 while the followers wait")
	lp, _ := c.brokers[leader].layerPartition("r", 0)
	if hw, end := lp.highWatermark(), lp.log.WrittenEnd(); hw >= end || len(segmentsOf(t, c.dirOf(leader), "r", 0)) < 4 {
		t.Fatalf("the leader's HW %d, log end %d, %d segments: the schedule did not happen",
			hw, end, len(segmentsOf(t, c.dirOf(leader), "r", 0)))
	}
	return c, leader, release
}

// failOver stops the leader, lets another ISR member lead, writes to it,
// restarts the old leader and checks that it follows: it rejoins the ISR
// holding the new leader's bytes (StrongIsr).
func failOver(t *testing.T, c *cluster, leader BrokerID, release func(), plant func(dir string)) {
	dir := c.dirOf(leader)
	c.stop(leader)
	next := c.waitLeader("r", 0, 2)
	release()
	sets, _ := variedSets(11, "s", 10)
	produceAll(t, c.brokers[next].b.Addr, "r", 0, wire.AcksAll, sets, "acks=-1 to the new leader")
	if plant != nil {
		plant(dir)
	}
	c.restart(leader, dir)
	c.waitLeader("r", 0, 3)
	np, _ := c.brokers[next].layerPartition("r", 0)
	op, _ := c.brokers[leader].layerPartition("r", 0)
	hw := np.highWatermark()
	wait.Within(t, clusterTimeout, "the old leader to hold the new leader's log", func() bool { return op.log.WrittenEnd() >= hw })
	from := max(np.log.StartOffset(), op.log.StartOffset())
	if got, want := logBytesFrom(t, dir, "r", 0, from, hw), logBytesFrom(t, c.dirOf(next), "r", 0, from, hw); !bytes.Equal(got, want) {
		t.Fatalf("the old leader's bytes from %d to the HW %d differ from the new leader's", from, hw)
	}
	c.checkStrongISR("r", 0)
}

// TestRule10RetentionKeepsWhatIsNotCommitted: retention on a replica deletes
// only segments wholly below its HW (Kafka since 0.8), however old or large
// the log: what is above may be all some other replica will lead with, or
// what an election asks this replica to truncate to.
//
// Before the fix the leader's retention deleted all but its last 55 KB (its
// log then started at 501,294 with the HW at 0); restarted after another
// replica was elected, it would have had to truncate to 0, below its log
// start (rule 11).
func TestRule10RetentionKeepsWhatIsNotCommitted(t *testing.T) {
	c, leader, release := uncommittedTail(t)
	lp, _ := c.brokers[leader].layerPartition("r", 0)
	if _, err := lp.log.DeleteOldSegments(); err != nil {
		t.Fatal(err)
	}
	if start, hw := lp.log.StartOffset(), lp.highWatermark(); start > hw {
		t.Fatalf("retention on the leader deleted up to %d, above its HW %d", start, hw)
	}
	failOver(t, c, leader, release, nil)
	// Once the HW has passed them, old segments go as before.
	np, _ := c.brokers[c.waitLeader("r", 0, 3)].layerPartition("r", 0)
	wait.Within(t, clusterTimeout, "retention to delete committed segments", func() bool {
		n, err := np.log.DeleteOldSegments()
		return err == nil && n > 0
	})
}

// TestRule11TruncationBelowOwnLogStartStartsOver: a follower told to
// truncate below its own log start (its log was cut above what the new
// leader holds: retention before rule 10, or an unclean election) starts
// over, empty, at the truncation point (Kafka's truncateFullyAndStartAt)
// and refetches from there.
//
// The replica's state is planted: the old leader's first segments are
// deleted while it is down, as rule 10's missing bound did. Before the fix
// it halted on "truncate: offset 0 is out of range" at every start.
func TestRule11TruncationBelowOwnLogStartStartsOver(t *testing.T) {
	c, leader, release := uncommittedTail(t)
	failOver(t, c, leader, release, func(dir string) {
		segs := segmentsOf(t, dir, "r", 0)
		for _, s := range segs[:len(segs)-1] {
			if err := os.Remove(s.path); err != nil {
				t.Fatal(err)
			}
		}
	})
}
