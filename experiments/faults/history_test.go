package faults

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/netdb11/kafka/experiments/faults/check"
)

// TestChronological: a trial's history is written in the order things
// happened (meta first, then by monotonic time, untimed events last), one
// consumer's polls and rebalances keep their order, and the file reads
// back and checks the same.
func TestChronological(t *testing.T) {
	evs := []check.Event{
		{Type: check.TypeReplica, Broker: 1},
		{Type: check.TypeRead, Reader: "g1", Poll: 1, Mono: 50},
		{Type: check.TypeRebalance, Reader: "g1", Mono: 50},
		{Type: check.TypeRead, Reader: "g1", Poll: 2, Mono: 50},
		{Type: check.TypeSend, Producer: 1, Seq: 1, StartMono: 10, Mono: 90},
		{Type: check.TypeNemesis, Name: "kill", StartMono: 40, Mono: 60},
		{Type: check.TypeMeta, Seed: 3},
		{Type: check.TypeEnd, Reader: "final1"},
	}
	chronological(evs)
	var got []string
	for _, e := range evs {
		got = append(got, e.Type+e.Reader)
	}
	want := []string{"meta", "send", "nemesis", "readg1", "rebalanceg1", "readg1", "replica", "endfinal1"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %q, want %q", got, want)
	}
	if evs[3].Poll != 1 || evs[5].Poll != 2 {
		t.Errorf("polls reordered: %+v", evs[3:6])
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := writeHistory(path, evs); err != nil {
		t.Fatal(err)
	}
	back, err := ReadHistory(path)
	if err != nil || len(back) != len(evs) || back[4].Type != check.TypeRebalance || back[1].StartMono != 10 || back[1].Mono != 90 {
		t.Errorf("read back %+v, %v", back, err)
	}
}
