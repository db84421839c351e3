package ui_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/replicatest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer/ui"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"
)

// TestBrowserReplicated drives kafka-ui in headless Chromium against a
// replicated topic on two brokers with the replication layer, broker 0
// with --metrics.listen and broker 1 without (issue 26, item 4): partition
// 0 is led by broker 1, partition 1 by broker 0, and group g, a real group
// consumer, has committed on both. Broker 1 lists both its replicas, the
// leader's with the log start and the high watermark from OFFSETS, the
// follower's with its role only (a follower does not answer OFFSETS); the
// group page shows each partition's log end (its high watermark) and lag,
// and the front page the same total lag; every replica's page lists g's
// committed offset.
//
// Before the fix, broker 1 showed 0 partitions and its replicas were in no
// topic list (/topics/r/1-0 was a 404 page), the group page showed log end
// and lag "?" for partition 0 while the front page said "0 B", and no
// partition page listed g ("no group has committed an offset here"), as it
// looked for the 0.7 name "0-0" where g commits "0".
func TestBrowserReplicated(t *testing.T) {
	ctx := browser(t)
	zk := zktest.Start(t)
	brokers := []*brokertest.Broker{startReplicated(t, zk, 0, true), startReplicated(t, zk, 1, false)}
	obs := zkbroker.Dial(t, zkcoord.Config{Connect: zk, SessionTimeout: 10 * time.Second})
	wait.Within(t, time.Minute, "both brokers to register", func() bool {
		reg, err := zkcoord.RegistryOn(obs).Brokers(false)
		return err == nil && len(reg) == 2
	})
	const rt = "r"
	// A new partition's first live replica leads it.
	if err := zkcoord.ReplicationOn(obs).CreateTopic(rt, zkcoord.Assignment{0: {1, 0}, 1: {0, 1}}); err != nil {
		t.Fatal(err)
	}
	for p, leader := range []wire.BrokerID{1, 0} {
		wait.Within(t, time.Minute, fmt.Sprintf("%s-%d to be led by %d with both replicas in sync", rt, p, leader), func() bool {
			st, _, ok, err := zkcoord.ReplicationOn(obs).PartitionStateOf(rt, wire.Partition(p))
			return err == nil && ok && st.Leader == leader && len(st.ISR) == 2
		})
	}
	produce := func(p wire.Partition, leader wire.BrokerID, payloads ...string) wire.Offset {
		t.Helper()
		var ps [][]byte
		for _, s := range payloads {
			ps = append(ps, []byte(s))
		}
		set := wire.NewMessageSet(ps...)
		wait.Within(t, time.Minute, fmt.Sprintf("the leader of %s-%d to acknowledge a produce", rt, p), func() bool {
			return replicatest.ProduceAcks(brokers[leader].Addr, rt, p, set) == nil
		})
		return wire.Offset(len(set))
	}
	hw0 := produce(0, 1, "one", "two, longer", "three, the longest of the three")
	hw1 := produce(1, 0, "four", "five, a little longer")

	// Group g consumes everything and commits, then more is produced to
	// the partition whose leader has no metrics.
	gc := startGroup(t, "g", zk, rt)
	committed := consume(t, gc, rt, 5)
	c0, c1 := committed[zkcoord.ReplicatedPartition(0)], committed[zkcoord.ReplicatedPartition(1)]
	if c0 != hw0 || c1 != hw1 {
		t.Fatalf("committed %v, want %d and %d", committed, hw0, hw1)
	}
	hw0 += produce(0, 1, "six", "seven, unread")
	lag := int64(hw0 - c0)

	ucfg := ui.DefaultConfig()
	ucfg.ZkConnect = zk
	ucfg.Refresh = time.Second
	base := serve(t, ucfg)
	var st pageState
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the page last read showed %+v", st)
		}
	})
	show := func(what, path string, ok func() bool) {
		t.Helper()
		wait.Within(t, pageTimeout, what, func() bool {
			var err error
			st, err = read(ctx, base+path+"?refresh=0")
			return err == nil && ok()
		})
	}
	show("the front page to count each broker's two replicas and g's lag", "/", func() bool {
		return slices.Equal(st.Brokers, []string{"0 | 2", "1 | 2"}) &&
			slices.Equal(st.Groups, []string{fmt.Sprintf("g | 1 | %d B", lag)})
	})
	show("the group page to show each partition's log end and lag", "/groups/g", func() bool {
		return slices.Equal(st.Rows, []string{fmt.Sprintf("%d %d %d", c0, hw0, lag), fmt.Sprintf("%d %d 0", c1, hw1)}) &&
			st.Lag == fmt.Sprint(lag) && st.Members == 1
	})
	show("broker 1's page to list its leader and follower replicas", "/brokers/1", func() bool {
		return len(st.Partitions) == 2 &&
			st.Partitions[0] == fmt.Sprintf("r 1-0 | leader | %d | 0 | %d | %d", hw0, hw0, hw0) &&
			strings.HasPrefix(st.Partitions[1], fmt.Sprintf("r 1-1 | follower of 0 | %d | known to its admin endpoint only", hw1))
	})
	show("the topic page to list the four replicas", "/topics/r", func() bool {
		var names []string
		for _, r := range st.Partitions {
			names = append(names, strings.SplitN(r, " | ", 2)[0])
		}
		return slices.Equal(names, []string{"r 0-0", "r 0-1", "r 1-0", "r 1-1"})
	})
	show("the leader's page without metrics to show g, the offsets and the high watermark", "/topics/r/1-0", func() bool {
		return st.Role == "leader" && st.HW == fmt.Sprint(hw0) && st.Start == "0" && st.Flushed == fmt.Sprint(hw0) && !st.NoOffsets &&
			slices.Equal(st.PartGroups, []string{fmt.Sprintf("g | %d | %d", c0, lag)})
	})
	show("the follower's page without metrics to show g and the high watermark", "/topics/r/1-1", func() bool {
		return st.Role == "follower" && st.HW == fmt.Sprint(hw1) && st.NoOffsets &&
			slices.Equal(st.PartGroups, []string{fmt.Sprintf("g | %d | 0", c1)})
	})
	show("the follower's page with metrics to show g", "/topics/r/0-0", func() bool {
		return st.Role == "follower" && len(st.Segments) == 1 &&
			slices.Equal(st.PartGroups, []string{fmt.Sprintf("g | %d | %d", c0, lag)})
	})
}
