package experiments

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/netdb11/kafka/broker/cli/progress"
	"github.com/netdb11/kafka/experiments/results"
)

// step is one unit of the plan: one tick of the progress bar on a terminal,
// one line elsewhere.
type step struct {
	label string
	// system is the system the step exercises; its steps are skipped once one
	// of its critical steps has failed. Empty: never skipped.
	system results.System
	// critical marks a step that the system's later steps cannot do without
	// (installing, starting, warming up a peer; starting the comparison's
	// broker).
	critical bool
	run      func(ctx context.Context) error
}

// executor runs a plan in order, showing its progress (broker/cli/progress:
// a bar on a terminal, one line per step in a log). A failing critical step
// of a system skips that system's later steps; any other failing step (a
// measurement) is logged and the plan goes on.
type executor struct {
	log      *slog.Logger
	progress io.Writer // nil: no progress shown
	// failed records, per system, the error that stopped its remaining steps.
	failed map[results.System]error
	// afterEach runs after every step; partial results are written there,
	// so that they survive an interrupted run.
	afterEach func() error
}

func newExecutor(log *slog.Logger, w io.Writer, afterEach func() error) *executor {
	return &executor{log: log, progress: w, failed: map[results.System]error{}, afterEach: afterEach}
}

// execute runs plan and joins the errors of the steps that failed.
func (e *executor) execute(ctx context.Context, plan []step) error {
	var steps *progress.Steps
	if e.progress != nil {
		steps = progress.New(e.progress, "experiments", len(plan))
	}
	var errs []error
	for _, s := range plan {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		steps.Begin(s.label)
		if ferr := e.failed[s.system]; ferr != nil {
			e.log.Warn("skipped", "step", s.label, "because", ferr)
		} else if err := s.run(ctx); err != nil {
			e.log.Error("step failed", "step", s.label, "err", err)
			errs = append(errs, fmt.Errorf("%s: %w", s.label, err))
			if s.critical && s.system != "" {
				e.failed[s.system] = err
			}
		}
		steps.End()
		if e.afterEach != nil {
			if err := e.afterEach(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
