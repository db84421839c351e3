package replica

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// Rule 5 (issue 21): a replica that cannot take a role gives it up. The
// disk fault is made with the file system alone, as root and without a
// mount: a non-empty directory where the leader-epoch file's temporary copy
// goes (writeFileAtomic writes <file>.tmp, fsyncs it and renames it over the
// file). Opening a directory for writing fails with EISDIR whoever the user
// is, and the clean-up's remove of the temporary fails with ENOTEMPTY, so
// the fault stays until the test repairs it. The file the broker reads at
// start is untouched: only a write fails, as on a disk that went bad.

// breakEpochWrites makes every later write of the leader-epoch file of
// topic-p in the log directory dir fail, and returns the repair.
func breakEpochWrites(t *testing.T, dir, topic string, p wire.Partition) (repair func()) {
	t.Helper()
	tmp := filepath.Join(dir, fmt.Sprintf("%s-%d", topic, p), EpochsFile+".tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "bad-sector"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := os.RemoveAll(tmp); err != nil {
			t.Fatal(err)
		}
	}
}

// waitHalted waits until broker id stops on its own because its replication
// layer halted on a storage error (0.8 halts the broker), then does what
// kafka-server's main does when the broker's Run returns: it closes the
// Registrar and the broker's one ZooKeeper session, so the registration
// goes. It returns the halt's error.
func (c *cluster) waitHalted(id BrokerID, why string) error {
	c.t.Helper()
	nd := c.brokers[id]
	wait.Within(c.t, clusterTimeout, fmt.Sprintf("broker %d to halt (%s)", id, why), func() bool {
		select {
		case <-nd.b.Done():
			return true
		default:
			return false
		}
	})
	err := nd.b.Exited()
	if !errors.Is(err, ErrHalted) {
		c.t.Fatalf("broker %d stopped with %v, want a halt on a storage error (%v)", id, err, ErrHalted)
	}
	if err := nd.reg.Close(); err != nil {
		c.t.Fatal(err)
	}
	if err := nd.sess.Close(); err != nil {
		c.t.Fatal(err)
	}
	delete(c.brokers, id)
	return err
}

// others returns the members of isr other than the given brokers, in order.
func others(isr []BrokerID, not ...BrokerID) []BrokerID {
	return slices.DeleteFunc(slices.Clone(isr), func(r BrokerID) bool { return slices.Contains(not, r) })
}

// TestRule5NewLeaderThatCannotRecordItsEpochHalts: the ISR member the
// controller elects when the leader dies cannot write its leader-epoch file
// (applyLeader's epochs.Assign, KIP-101). It must not stay the leader in
// ZooKeeper without leading: its broker halts, the controller elects the
// other ISR member, acks=-1 produces succeed again once the old leader has
// rejoined, StrongIsr holds, and every acknowledged message is read back;
// the repaired broker rejoins the ISR.
//
// Before the fix (56966d5^, the commit before Manager.abdicate; the test
// run there with ErrHalted replaced) it failed after 30 s waiting for
// "broker 1 to halt": elected in epoch 1 with ISR [1 2], broker 1 logged
// "recording the leader epoch: ... leader-epoch-checkpoint.tmp: is a
// directory", answered the order with an error the controller did not act
// on, and stayed the leader in ZooKeeper without leading for the 30 s; no
// other member was elected.
func TestRule5NewLeaderThatCannotRecordItsEpochHalts(t *testing.T) {
	c := startCluster(t, 3, func(id int, cfg *broker.Config, rc *Config) { rc.MinInsyncReplicas = 2 })
	c.createTopic("e", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("e", 0, 3)
	leaderDir := c.dirOf(leader)
	setsA, acked := variedSets(51, "a", 20)
	produceAll(t, c.brokers[leader].b.Addr, "e", 0, wire.AcksAll, setsA, "before the fault")
	before, _ := c.state("e", 0)
	// The controller elects the first live ISR member: next. It already
	// holds epoch 0 in its file (it appended the acknowledged sets).
	rest := others(before.ISR, leader)
	if len(rest) != 2 {
		t.Fatalf("ISR %v with leader %d", before.ISR, leader)
	}
	next, other := rest[0], rest[1]
	nextDir := c.dirOf(next)
	repair := breakEpochWrites(t, nextDir, "e", 0)

	c.stop(leader)
	err := c.waitHalted(next, "elected, it cannot write its leader-epoch file")
	if !strings.Contains(err.Error(), EpochsFile) {
		t.Fatalf("halted with %v, want the leader-epoch file's write error", err)
	}
	wait.Within(t, clusterTimeout, "the controller to elect the other ISR member", func() bool {
		st, ok := c.state("e", 0)
		return ok && st.Leader == other && st.LeaderEpoch >= before.LeaderEpoch+2 && !slices.Contains(st.ISR, next)
	})
	// Only one ISR member is alive: acks=-1 waits for min.insync.replicas.
	// The old leader comes back, catches up from the new one and rejoins.
	c.rejoinAfterHalt(t, "e", other, leader, leaderDir, next, nextDir, repair, 52, acked)
}

// TestRule5FollowerThatCannotTruncateHalts: a follower that must cut its
// log for a new leader (the bytes an old leader of its own accepted with
// acks=1 in an epoch the new leader never held) cannot write its
// leader-epoch file when it drops that epoch (fetcher.truncate's
// TruncateFrom). It must not fetch on with an epoch file that describes
// bytes it no longer holds: its broker halts and the partition is left to
// the others, which go on acknowledging acks=-1; once repaired it truncates,
// catches up and rejoins, StrongIsr holds, and a consumer reads every
// acknowledged message and none of the acks=1 ones the failover discarded.
//
// Before the fix (56966d5^) it failed after 30 s waiting for "broker 1 to
// halt": the follower cut its log (292,182 to 184,238), could not drop the
// epoch from its file and logged "follower truncation: retrying" 2,665
// times in the 30 s, out of the ISR and giving nothing up.
func TestRule5FollowerThatCannotTruncateHalts(t *testing.T) {
	c := startCluster(t, 3, func(id int, cfg *broker.Config, rc *Config) {
		rc.MinInsyncReplicas = 2
		rc.LagTime = time.Minute // the held follower stays in the ISR
	})
	c.createTopic("u", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("u", 0, 3)
	leaderDir := c.dirOf(leader)
	setsA, acked := variedSets(61, "a", 20)
	produceAll(t, c.brokers[leader].b.Addr, "u", 0, wire.AcksAll, setsA, "before any fault")
	before, _ := c.state("u", 0)
	rest := others(before.ISR, leader)
	if len(rest) != 2 {
		t.Fatalf("ISR %v with leader %d", before.ISR, leader)
	}
	f1, f2 := rest[0], rest[1] // the controller elects f1 next

	// The leader dies; f1 leads in a new epoch and accepts acks=1 writes
	// that f2, held after its truncation, never copies.
	release := holdAfterTruncation(t, "u")
	defer release()
	c.stop(leader)
	if got := c.waitLeader("u", 0, 2); got != f1 {
		t.Fatalf("leader %d after %d died, want %d", got, leader, f1)
	}
	setsX, _ := variedSets(62, "x", 10)
	produceAll(t, c.brokers[f1].b.Addr, "u", 0, wire.AcksLeader, setsX, "acks=1 that no follower copies")
	f1p, _ := c.brokers[f1].layerPartition("u", 0)
	f1Epochs := f1p.epochs.Entries()
	if len(f1Epochs) < 2 {
		t.Fatalf("f1's epochs %v: want the epoch it led in after the first", f1Epochs)
	}
	divergesAt := f1Epochs[len(f1Epochs)-1].Start

	// f1 dies; f2 leads; the old leader returns and rejoins its ISR.
	f1Dir := c.dirOf(f1)
	c.stop(f1)
	wait.Within(t, clusterTimeout, "f2 to be elected", func() bool {
		st, ok := c.state("u", 0)
		return ok && st.Leader == f2
	})
	release()
	c.restart(leader, leaderDir)
	if got := c.waitLeader("u", 0, 2); got != f2 {
		t.Fatalf("leader %d, want %d", got, f2)
	}
	setsB, more := variedSets(63, "b", 20)
	produceAll(t, c.brokers[f2].b.Addr, "u", 0, wire.AcksAll, setsB, "acks=-1 to f2")
	acked = append(acked, more...)

	// f1 comes back on a disk that refuses to write its epoch file: it
	// must drop the epoch of its acks=1 writes and cannot.
	if end := logEnd(t, f1Dir, "u", 0); end <= divergesAt {
		t.Fatalf("f1's log ends at %d, not past its own epoch's start %d: nothing to truncate", end, divergesAt)
	}
	repair := breakEpochWrites(t, f1Dir, "u", 0)
	c.restart(f1, f1Dir)
	err := c.waitHalted(f1, "a follower that cannot record its truncation")
	if !strings.Contains(err.Error(), EpochsFile) {
		t.Fatalf("halted with %v, want the leader-epoch file's write error", err)
	}
	st, _ := c.state("u", 0)
	if st.Leader != f2 || slices.Contains(st.ISR, f1) {
		t.Fatalf("after f1 halted the state is %+v, want %d leading without %d in the ISR", st, f2, f1)
	}
	setsC, more := variedSets(64, "c", 10)
	produceAll(t, c.brokers[f2].b.Addr, "u", 0, wire.AcksAll, setsC, "acks=-1 while f1 is down")
	acked = append(acked, more...)
	c.checkStrongISR("u", 0)

	// Repaired, f1 truncates, catches up and rejoins.
	repair()
	c.restart(f1, f1Dir)
	if got := c.waitLeader("u", 0, 3); got != f2 {
		t.Fatalf("leader %d after f1 rejoined, want %d", got, f2)
	}
	setsD, more := variedSets(65, "d", 10)
	produceAll(t, c.brokers[f2].b.Addr, "u", 0, wire.AcksAll, setsD, "acks=-1 with every replica back")
	acked = append(acked, more...)
	c.checkStrongISR("u", 0)
	consumeAll(t, c.brokers[f2].b.Addr, "u", 0, acked)
	consumeAll(t, c.brokers[f1].b.Addr, "u", 0, acked)
}

// TestRule5FollowerThatCannotRecordANewEpochHalts: a follower that cannot
// write its leader-epoch file when it appends the first bytes of a new
// leader's epoch (fetcher.append's epochs.Assign) cannot follow: its epoch
// file would not describe its log, and every retry cuts the bytes again. Its
// broker halts (0.8's ReplicaFetcherThread halts on a KafkaStorageException),
// the controller drops it from the ISR, acks=-1 succeeds once the old
// leader rejoins, and once repaired it catches up and rejoins.
//
// Before the fix (fetcher.append's epoch-file error was retried as any
// other) it failed after 30 s waiting for "broker 2 to halt": the follower
// logged "follower append failed" 1,141 times, each time cutting the bytes
// it had appended and fetching them again, still registered and holding
// its replica slot.
func TestRule5FollowerThatCannotRecordANewEpochHalts(t *testing.T) {
	c := startCluster(t, 3, func(id int, cfg *broker.Config, rc *Config) { rc.MinInsyncReplicas = 2 })
	c.createTopic("n", zkcoord.Assignment{0: {0, 1, 2}})
	leader := c.waitLeader("n", 0, 3)
	leaderDir := c.dirOf(leader)
	setsA, want := variedSets(71, "a", 20)
	produceAll(t, c.brokers[leader].b.Addr, "n", 0, wire.AcksAll, setsA, "before the fault")
	before, _ := c.state("n", 0)
	rest := others(before.ISR, leader)
	if len(rest) != 2 {
		t.Fatalf("ISR %v with leader %d", before.ISR, leader)
	}
	f1, f2 := rest[0], rest[1] // the controller elects f1 next
	f2Dir := c.dirOf(f2)
	repair := breakEpochWrites(t, f2Dir, "n", 0)

	c.stop(leader)
	if got := c.waitLeader("n", 0, 2); got != f1 {
		t.Fatalf("leader %d after %d died, want %d", got, leader, f1)
	}
	// The first bytes of f1's epoch: f2 must record the epoch to hold them.
	setsX, more := variedSets(72, "x", 10)
	produceAll(t, c.brokers[f1].b.Addr, "n", 0, wire.AcksLeader, setsX, "acks=1 to the new leader")
	want = append(want, more...) // f1 leads throughout: nothing discards them
	err := c.waitHalted(f2, "a follower that cannot record the new leader's epoch")
	if !strings.Contains(err.Error(), EpochsFile) {
		t.Fatalf("halted with %v, want the leader-epoch file's write error", err)
	}
	wait.Within(t, clusterTimeout, "the controller to drop the halted follower from the ISR", func() bool {
		st, ok := c.state("n", 0)
		return ok && st.Leader == f1 && !slices.Contains(st.ISR, f2)
	})
	c.rejoinAfterHalt(t, "n", f1, leader, leaderDir, f2, f2Dir, repair, 73, want)
}

// rejoinAfterHalt ends a rule 5 scenario on partition 0 of topic, led by
// lead since the halt: the crashed old leader comes back (two replicas
// alive) and acks=-1 works; then the disk is repaired, the halted broker
// comes back as a follower and acks=-1 works with every replica. lead
// stays the leader throughout, StrongIsr holds after each step, and a
// consumer reads exactly acked and what these steps add (sets seeded seed
// and seed+1).
func (c *cluster) rejoinAfterHalt(t *testing.T, topic string, lead, old BrokerID, oldDir string, halted BrokerID, haltedDir string, repair func(), seed uint64, acked []string) {
	t.Helper()
	c.restart(old, oldDir)
	if got := c.waitLeader(topic, 0, 2); got != lead {
		t.Fatalf("leader %d after the old leader rejoined, want %d", got, lead)
	}
	setsB, more := variedSets(seed, "b", 20)
	produceAll(t, c.brokers[lead].b.Addr, topic, 0, wire.AcksAll, setsB, "acks=-1 to the leader elected after the halt")
	acked = append(acked, more...)
	c.checkStrongISR(topic, 0)

	// The disk is repaired: the halted broker comes back as a follower.
	repair()
	c.restart(halted, haltedDir)
	if got := c.waitLeader(topic, 0, 3); got != lead {
		t.Fatalf("leader %d after the repaired broker rejoined, want %d", got, lead)
	}
	setsC, more := variedSets(seed+1, "c", 10)
	produceAll(t, c.brokers[lead].b.Addr, topic, 0, wire.AcksAll, setsC, "acks=-1 with every replica back")
	acked = append(acked, more...)
	c.checkStrongISR(topic, 0)
	consumeAll(t, c.brokers[lead].b.Addr, topic, 0, acked)
}
