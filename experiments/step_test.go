package experiments

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/netdb11/kafka/experiments/results"
)

// A failing critical step skips its system's later steps, and only its
// system's; a failing measurement does not; a step of no system always runs;
// results are written after every step.
func TestExecutorSkipsAfterCriticalFailure(t *testing.T) {
	var ran []string
	do := func(label string, sys results.System, critical bool, err error) step {
		return step{label: label, system: sys, critical: critical, run: func(context.Context) error {
			ran = append(ran, label)
			return err
		}}
	}
	writes := 0
	e := newExecutor(slog.New(slog.DiscardHandler), nil, func() error { writes++; return nil })
	err := e.execute(context.Background(), []step{
		do("kafka measure fails", results.Kafka, false, errors.New("moved no messages")),
		do("kafka after a failed measurement", results.Kafka, false, nil),
		do("rabbitmq start fails", results.RabbitMQ, true, errors.New("no package")),
		do("rabbitmq measure", results.RabbitMQ, false, nil),
		do("kafka still runs", results.Kafka, false, nil),
		do("rabbitmq stop", "", false, nil),
	})
	want := []string{"kafka measure fails", "kafka after a failed measurement", "rabbitmq start fails", "kafka still runs", "rabbitmq stop"}
	if !slices.Equal(ran, want) {
		t.Errorf("ran %q, want %q", ran, want)
	}
	if err == nil || !strings.Contains(err.Error(), "moved no messages") || !strings.Contains(err.Error(), "no package") {
		t.Errorf("execute = %v, want both failures", err)
	}
	if e.failed[results.RabbitMQ] == nil || e.failed[results.Kafka] != nil {
		t.Errorf("failed systems = %v, want rabbitmq only", e.failed)
	}
	if writes != 6 {
		t.Errorf("results written %d times, want after each of 6 steps", writes)
	}
	// A cancelled context stops the plan before the next step.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran = nil
	if err := newExecutor(slog.New(slog.DiscardHandler), nil, nil).execute(ctx, []step{do("never", "", false, nil)}); !errors.Is(err, context.Canceled) || len(ran) != 0 {
		t.Errorf("cancelled plan: %v, ran %q", err, ran)
	}
}

// Off a terminal (here a buffer; in `make run > run.log 2>&1` a file), the
// plan's progress is one line per step, each naming its step, and a closing
// line. Before issue 24 the progress bar was redrawn into the log: a
// carriage return and a full bar per redraw, about a thousand in a `make
// run` log, and no step on a line of its own.
func TestExecutorProgressOffATerminalIsOneLinePerStep(t *testing.T) {
	var out bytes.Buffer
	ok := func(label string) step { return step{label: label, run: func(context.Context) error { return nil }} }
	e := newExecutor(slog.New(slog.DiscardHandler), &out, nil)
	if err := e.execute(context.Background(), []step{ok("start kafka"), ok("kafka producer batch 50 run 1"), ok("stop kafka")}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if strings.Contains(out.String(), "\r") || len(lines) != 4 {
		t.Fatalf("progress %q, want 4 lines and no carriage return", out.String())
	}
	for i, want := range []string{"experiments 1/3 (", "experiments 2/3 (", "experiments 3/3 (", "experiments: finished 3/3 in "} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d = %q, want it to start %q", i+1, lines[i], want)
		}
	}
	if !strings.HasSuffix(lines[1], "): kafka producer batch 50 run 1") {
		t.Errorf("line 2 = %q, want the step's label", lines[1])
	}
}
