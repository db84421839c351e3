package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/experiments/faults/check"
)

// TestLibraryRefusal: a library send counts as refused (nothing appended)
// only when every attempt was answered NotEnoughReplicas, as heard in the
// library's log of its retries.
func TestLibraryRefusal(t *testing.T) {
	ner := fmt.Errorf("producer: broker 1: %w", wire.ErrNotEnoughReplicas)
	timedOut := fmt.Errorf("producer: broker 1: %w", wire.ErrRequestTimedOut)
	heard := &attempts{}
	log := slog.New(heard)
	log.Info("producer: retrying", "topic", "faults", "err", ner)
	log.Info("producer: connected", "err", timedOut) // not a retry
	log.Info("producer: retrying", "topic", "faults", "err", ner)
	for _, tt := range []struct {
		name    string
		retried []error
		n       int
		want    bool
	}{
		{"one attempt", nil, 1, true},
		{"every attempt refused", heard.take(), 3, true},
		{"an attempt timed out", []error{ner, timedOut}, 3, false},
		{"attempts not all heard", []error{ner}, 3, false},
	} {
		if got := allRefused(tt.retried, tt.n); got != tt.want {
			t.Errorf("%s: allRefused = %v, want %v", tt.name, got, tt.want)
		}
	}
	if rest := heard.take(); len(rest) != 0 {
		t.Errorf("take left %v", rest)
	}
	if !heard.Enabled(context.Background(), slog.LevelDebug) || !errors.Is(ner, wire.ErrNotEnoughReplicas) {
		t.Error("the handler must hear every level")
	}
}

// TestBudgetStopsAPartitionsProducers: a partition's producers stop before
// the bytes they sent (retries counted) pass the budget, so that a
// retention nemesis's log.retention.size never deletes the workload's head
// (the soak's seed 464); each partition's budget is its own.
func TestBudgetStopsAPartitionsProducers(t *testing.T) {
	var notes []string
	w := &workload{budget: 100, note: func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }}
	p0 := partition{tp: check.TP{Topic: "faults", Partition: 0}}
	p1 := partition{tp: check.TP{Topic: "faults", Partition: 1}}
	if !w.spend(p0, 60) || !w.spend(p0, 40) {
		t.Fatal("refused bytes within the budget")
	}
	if w.spend(p0, 1) {
		t.Fatal("allowed a byte past the budget")
	}
	if w.spend(p0, 1) || len(notes) != 1 {
		t.Fatalf("after the budget: notes %q, want one", notes)
	}
	if !w.spend(p1, 100) {
		t.Fatal("partition 1 refused: budgets are per partition")
	}
	if got := batchBytes([][]byte{make([]byte, 5), nil}); got != 2*wire.Overhead+5 {
		t.Errorf("batchBytes = %d, want %d", got, 2*wire.Overhead+5)
	}
	unlimited := &workload{}
	if !unlimited.spend(p0, 1<<40) {
		t.Error("a workload without a budget refused")
	}
}
