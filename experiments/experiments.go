package experiments

import (
	"context"
	"errors"
	"time"

	"github.com/netdb11/kafka/experiments/machine"
	"github.com/netdb11/kafka/experiments/results"
)

// Run performs the experiments described by cfg, writes every run as CSV and JSON
// with the configuration and the machine's description, draws the figures and
// writes report.md, all under cfg.Out. It returns the result set; runs that
// failed are in it with their error, and Run's error joins the failures.
func Run(ctx context.Context, cfg Config) (*results.Set, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l, err := newLab(cfg)
	if err != nil {
		return nil, err
	}
	defer l.removeWork()

	l.log.Info("describing the machine", "dir", l.work)
	l.machine = l.describe(ctx)
	set := &results.Set{Machine: l.machine, Config: l.cfg.Config, Started: time.Now().UTC()}
	l.rec = &record{set: set, dir: l.cfg.Out}

	if l.tb, err = StartTestbed(ctx, cfg.Testbed, l.cfg.RepoDir, l.log); err != nil {
		return nil, err
	}
	defer func() {
		if err := l.tb.Close(); err != nil {
			l.log.Error("taking the testbed down", "err", err)
		}
	}()
	defer l.cleanups.run()
	set.Testbed = l.tb.Description
	if ctr, ok := l.rt.(*containerRuntime); ok {
		if err := ctr.prepare(ctx); err != nil {
			return nil, err
		}
		ctr.packageVersions(ctx, &l.machine)
		set.Machine = l.machine
		l.tb.Description += "; " + ctr.description()
		set.Testbed = l.tb.Description
	} else {
		// Limits that applied to nothing are not recorded.
		set.Config.ContainerCPUs, set.Config.ContainerMemory = "", ""
	}

	ex := newExecutor(l.log, cfg.Progress, l.rec.write)
	runErr := ex.execute(ctx, plan(l))
	if ctx.Err() == nil {
		l.log.Info("measuring the machine's limits again")
		after := l.describe(ctx)
		set.LimitsAfter = &after
	}
	set.Finished = time.Now().UTC()
	return set, errors.Join(runErr, l.writeReport(ex.failed))
}

// describe describes the machine and measures its limits in the work
// directory, with the streams shaped as this configuration's clients.
func (l *lab) describe(ctx context.Context) machine.Machine {
	return machine.Describe(ctx, machine.Options{Dir: l.work, DiskBytes: l.cfg.DiskTestBytes, LoopbackBytes: l.cfg.LoopbackTestBytes,
		ProducerRequestBytes: produceRequestBytes(l.cfg.MessageSize, 50), FetchBytes: l.cfg.fetchSize()})
}
