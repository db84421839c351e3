package zkcoord

import (
	"errors"
	"reflect"
	"testing"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord/zktest"
)

func TestPartitionNodeNames(t *testing.T) {
	for _, tc := range []struct {
		bp   wire.BrokerPartition
		name string
	}{
		{wire.BrokerPartition{Broker: 0, Partition: 3}, "0-3"},
		{wire.BrokerPartition{Broker: 12, Partition: 0}, "12-0"},
		{ReplicatedPartition(7), "7"},
	} {
		if got := PartitionNodeName(tc.bp); got != tc.name {
			t.Errorf("PartitionNodeName(%v) = %q, want %q", tc.bp, got, tc.name)
		}
		if got, err := ParsePartitionNodeName(tc.name); err != nil || got != tc.bp {
			t.Errorf("ParsePartitionNodeName(%q) = %v, %v; want %v", tc.name, got, err, tc.bp)
		}
	}
	for _, bad := range []string{"", "-1", "x", "1-", "-1-0", "1-x", "99999999999"} {
		if bp, err := ParsePartitionNodeName(bad); err == nil {
			t.Errorf("ParsePartitionNodeName(%q) = %v, want an error", bad, bp)
		}
	}
	if got := OffsetPath("g", "t", ReplicatedPartition(2)); got != "/consumers/g/offsets/t/2" {
		t.Errorf("OffsetPath of a replicated partition = %q, want 0.8's /consumers/g/offsets/t/2", got)
	}
	if got := OwnerPath("g", "t", wire.BrokerPartition{Broker: 1, Partition: 2}); got != "/consumers/g/owners/t/1-2" {
		t.Errorf("OwnerPath of a 0.7 partition = %q", got)
	}
}

func FuzzParsePartitionNodeName(f *testing.F) {
	for _, s := range []string{"0", "7", "1-2", "12-0", "-1-0", "", "a-b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		bp, err := ParsePartitionNodeName(s)
		if err != nil {
			return
		}
		again, err := ParsePartitionNodeName(PartitionNodeName(bp))
		if err != nil || again != bp {
			t.Fatalf("%q parsed to %v, whose name %q parses to %v, %v", s, bp, PartitionNodeName(bp), again, err)
		}
	})
}

// GroupPartitionNames gives 0.8's partition numbers for a replicated topic,
// 0.7's registrations for another, and PartitionLeader reads the state.
func TestGroupPartitionNamesAndLeader(t *testing.T) {
	c := dial(t, testConfig(zktest.Start(t)))
	if err := ReplicationOn(c).CreateTopic("r", Assignment{0: {1, 2}, 1: {2, 1}, 10: {1, 2}}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateEphemeral(TopicBrokerPath("plain", 3), []byte("2")); err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string][]string{"r": {"0", "1", "10"}, "plain": {"3-0", "3-1"}, "none": nil} {
		got, err := GroupsOn(c).GroupPartitionNames(topic, true)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("GroupPartitionNames(%s) = %q, %v; want %q", topic, got, err, want)
		}
	}
	if _, _, err := GroupsOn(c).PartitionLeader("r", 0); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("PartitionLeader without a state = %v, want ErrNoLeader", err)
	}
	if _, err := ReplicationOn(c).WritePartitionState("r", 0, PartitionState{Leader: 2, LeaderEpoch: 3, ISR: []wire.BrokerID{2, 1}}, -1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := GroupsOn(c).PartitionLeader("r", 0); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("PartitionLeader with an unregistered leader = %v, want ErrNoLeader", err)
	}
	if err := c.CreateEphemeral(BrokerPath(2), []byte("c:127.0.0.1:9092")); err != nil {
		t.Fatal(err)
	}
	info, st, err := GroupsOn(c).PartitionLeader("r", 0)
	if err != nil || info.ID != 2 || info.Addr() != "127.0.0.1:9092" || st.LeaderEpoch != 3 {
		t.Fatalf("PartitionLeader = %+v, %+v, %v", info, st, err)
	}
	// A new partition in the assignment fires the watch GroupPartitionNames left.
	if err := ReplicationOn(c).SetTopicAssignment("r", Assignment{0: {1, 2}, 1: {2, 1}, 10: {1, 2}, 11: {1}}); err != nil {
		t.Fatal(err)
	}
	for {
		ev := nextEvent(t, c)
		if ev.Path == TopicPath("r") && ev.Type == EventData {
			break
		}
	}
}
