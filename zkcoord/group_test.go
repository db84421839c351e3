package zkcoord

import (
	"errors"
	"reflect"
	"testing"

	"github.com/netdb11/kafka/zkcoord/zktest"

	"github.com/netdb11/kafka/broker/wire"
)

func TestGroupRegistry(t *testing.T) {
	connect := zktest.Start(t)
	a := dial(t, testConfig(connect))
	b := dial(t, testConfig(connect))

	subA, _ := StaticSubscription(map[string]int{"t": 2})
	subB, _ := StaticSubscription(map[string]int{"t": 1, "u": 1})
	if err := GroupsOn(a).RegisterConsumer("g", "g_a", subA); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Get("/consumers/g/ids/g_a"); err != nil || string(v) != `{ "t": 2 }` {
		t.Fatalf("/consumers/g/ids/g_a = %q, %v; want 0.7's JSON", v, err)
	}
	// Watch membership from a, then b joins.
	members, err := GroupsOn(a).GroupMembers("g", true)
	if err != nil || len(members) != 1 {
		t.Fatalf("GroupMembers = %v, %v", members, err)
	}
	if err := GroupsOn(b).RegisterConsumer("g", "g_b", subB); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, a); ev != (Event{Type: EventChildren, Path: "/consumers/g/ids"}) {
		t.Fatalf("event = %v, want children of /consumers/g/ids", ev)
	}
	members, err = GroupsOn(a).GroupMembers("g", true)
	if err != nil || len(members) != 2 || members["g_b"].String() != subB.String() {
		t.Fatalf("GroupMembers = %v, %v", members, err)
	}
	threads := ThreadsPerTopic(members, nil)
	want := map[string][]string{"t": {"g_a-0", "g_a-1", "g_b-0"}, "u": {"g_b-0"}}
	if !reflect.DeepEqual(threads, want) {
		t.Fatalf("ThreadsPerTopic = %v, want %v", threads, want)
	}

	// Ownership: the first claim wins; the second names the owner.
	p := wire.BrokerPartition{Broker: 0, Partition: 1}
	if err := GroupsOn(a).ClaimPartition("g", "t", p, "g_a-0"); err != nil {
		t.Fatal(err)
	}
	err = GroupsOn(b).ClaimPartition("g", "t", p, "g_b-0")
	var owned *OwnedError
	if !errors.As(err, &owned) || !errors.Is(err, ErrPartitionOwned) || owned.Owner != "g_a-0" {
		t.Fatalf("conflicting claim = %v, want *OwnedError by g_a-0", err)
	}
	if owner, ok, err := GroupsOn(b).PartitionOwner("g", "t", p); owner != "g_a-0" || !ok || err != nil {
		t.Fatalf("PartitionOwner = %q, %v, %v", owner, ok, err)
	}
	if v, err := b.Get("/consumers/g/owners/t/0-1"); err != nil || string(v) != "g_a-0" {
		t.Fatalf("owner node = %q, %v", v, err)
	}
	// b cannot release a's claim; a can.
	if err := GroupsOn(b).ReleasePartition("g", "t", p); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := GroupsOn(b).PartitionOwner("g", "t", p); !ok {
		t.Fatal("another session's release removed the owner")
	}
	if err := GroupsOn(a).ReleasePartition("g", "t", p); err != nil {
		t.Fatal(err)
	}
	if err := GroupsOn(b).ClaimPartition("g", "t", p, "g_b-0"); err != nil {
		t.Fatalf("claim after release: %v", err)
	}

	// Offsets: persistent, decimal, survive the session.
	if _, ok, err := GroupsOn(a).Offset("g", "t", p); ok || err != nil {
		t.Fatalf("Offset before commit = %v, %v", ok, err)
	}
	if err := GroupsOn(a).CommitOffset("g", "t", p, 123456789012); err != nil {
		t.Fatal(err)
	}
	if err := GroupsOn(a).CommitOffset("g", "t", wire.BrokerPartition{Broker: 1, Partition: 0}, 5); err != nil {
		t.Fatal(err)
	}
	if err := GroupsOn(a).CommitOffset("g", "t", p, -1); err == nil {
		t.Fatal("negative offset committed")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Get("/consumers/g/offsets/t/0-1"); err != nil || string(v) != "123456789012" {
		t.Fatalf("offset node = %q, %v", v, err)
	}
	if off, ok, err := GroupsOn(b).Offset("g", "t", p); off != 123456789012 || !ok || err != nil {
		t.Fatalf("Offset = %d, %v, %v", off, ok, err)
	}
	parts, err := GroupsOn(b).OffsetPartitions("g", "t")
	if err != nil || !reflect.DeepEqual(parts, []wire.BrokerPartition{{Broker: 0, Partition: 1}, {Broker: 1, Partition: 0}}) {
		t.Fatalf("OffsetPartitions = %v, %v", parts, err)
	}
	if topics, err := GroupsOn(b).OffsetTopics("g"); err != nil || !reflect.DeepEqual(topics, []string{"t"}) {
		t.Fatalf("OffsetTopics = %v, %v", topics, err)
	}
	if groups, err := GroupsOn(b).List(); err != nil || !reflect.DeepEqual(groups, []string{"g"}) {
		t.Fatalf("Groups = %v, %v", groups, err)
	}
	// a's session ended: its member node went, its offsets stayed.
	if members, err := GroupsOn(b).GroupMembers("g", false); err != nil || len(members) != 1 {
		t.Fatalf("GroupMembers after a closed = %v, %v", members, err)
	}
	// A corrupt offset is an error, not a zero.
	if err := b.SetPersistent("/consumers/g/offsets/t/2-0", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := GroupsOn(b).Offset("g", "t", wire.BrokerPartition{Broker: 2}); err == nil {
		t.Fatal("Offset of a corrupt node succeeded")
	}
	// Bad names never reach the server.
	if err := GroupsOn(b).RegisterConsumer("a/b", "x", subA); err == nil {
		t.Fatal("RegisterConsumer with group a/b succeeded")
	}
	if err := GroupsOn(b).CommitOffset("g", "..", p, 1); err == nil {
		t.Fatal("CommitOffset with topic .. succeeded")
	}
}
