package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/netdb11/kafka/broker/wire"
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
