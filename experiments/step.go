package experiments

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/schollz/progressbar/v3"

	"github.com/netdb11/kafka/experiments/results"
)

// step is one unit of the plan, shown as one tick of the progress bar.
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

// executor runs a plan in order with a progress bar. A failing critical step
// of a system skips that system's later steps; any other failing step (a
// measurement) is logged and the plan goes on.
type executor struct {
	log      *slog.Logger
	progress io.Writer // nil: no progress bar
	// failed records, per system, the error that stopped its remaining steps.
	failed map[results.System]error
	// afterEach runs after every step; partial results are written there,
	// so that they survive an interrupted run.
	afterEach func() error
}

func newExecutor(log *slog.Logger, progress io.Writer, afterEach func() error) *executor {
	return &executor{log: log, progress: progress, failed: map[results.System]error{}, afterEach: afterEach}
}

// execute runs plan and joins the errors of the steps that failed.
func (e *executor) execute(ctx context.Context, plan []step) error {
	var bar *progressbar.ProgressBar
	if e.progress != nil {
		bar = progressbar.NewOptions(len(plan),
			progressbar.OptionSetWriter(e.progress),
			progressbar.OptionSetDescription("experiments"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(e.progress) }),
		)
	}
	var errs []error
	for _, s := range plan {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		if bar != nil {
			bar.Describe(fmt.Sprintf("%-58.58s", s.label))
		}
		if ferr := e.failed[s.system]; ferr != nil {
			e.log.Warn("skipped", "step", s.label, "because", ferr)
		} else if err := s.run(ctx); err != nil {
			e.log.Error("step failed", "step", s.label, "err", err)
			errs = append(errs, fmt.Errorf("%s: %w", s.label, err))
			if s.critical && s.system != "" {
				e.failed[s.system] = err
			}
		}
		if bar != nil {
			_ = bar.Add(1)
		}
		if e.afterEach != nil {
			if err := e.afterEach(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
