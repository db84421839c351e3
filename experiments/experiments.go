package experiments

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/netdb11/kafka/experiments/kit"
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
	if cfg.DirtyBytes > 0 {
		restore, err := limitDirtyBytes(ctx, machine.VMSysctlDir, cfg.DirtyBytes, l.log)
		if err != nil {
			return nil, err
		}
		defer restore()
	}

	l.log.Info("describing the machine", "dir", l.work)
	l.machine = l.describe(ctx)
	set := &results.Set{Machine: l.machine, Config: l.cfg.Config, Started: time.Now().UTC()}
	l.rec = &record{set: set, dir: l.cfg.Out}

	if l.tb, err = kit.StartTestbed(ctx, cfg.Testbed, l.cfg.RepoDir, l.log); err != nil {
		return nil, err
	}
	defer func() {
		if err := l.tb.Close(); err != nil {
			l.log.Error("taking the testbed down", "err", err)
		}
	}()
	defer l.cleanups.Run()
	set.Testbed = l.tb.Description
	if ctr, ok := l.rt.(*kit.Containers); ok {
		if err := ctr.Prepare(ctx); err != nil {
			return nil, err
		}
		ctr.PackageVersions(ctx, &l.machine)
		set.Machine = l.machine
		l.tb.Description += "; " + ctr.Description()
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

// limitDirtyBytes sets vm.dirty_bytes to dirty and vm.dirty_background_bytes
// to a quarter of it in dir (machine.VMSysctlDir) for the run (Config.DirtyBytes, issue 14: the
// producer's sustained phase of paper §5 on a machine whose page cache
// would absorb the whole run) and returns the function that restores the
// previous settings; Run defers it, so every return restores them, and the
// run's context ending (SIGINT, SIGTERM) restores them at once, before the
// teardown. Only SIGKILL leaves them set.
func limitDirtyBytes(ctx context.Context, dir string, dirty int64, log *slog.Logger) (restore func(), err error) {
	undo, err := machine.LimitDirtyBytes(dir, dirty, dirty/4)
	if err != nil {
		return nil, err
	}
	once := sync.OnceFunc(func() {
		if err := undo(); err != nil {
			log.Error("restoring the writeback settings", "err", err)
		}
	})
	stop := context.AfterFunc(ctx, once)
	return func() { stop(); once() }, nil
}

// describe describes the machine and measures its limits in the work
// directory, with the streams shaped as this configuration's clients.
func (l *lab) describe(ctx context.Context) machine.Machine {
	m := machine.Describe(ctx, machine.Options{Dir: l.work, DiskBytes: l.cfg.DiskTestBytes, LoopbackBytes: l.cfg.LoopbackTestBytes,
		ProducerRequestBytes: produceRequestBytes(l.cfg.MessageSize, 50), FetchBytes: l.cfg.fetchSize()})
	if l.cfg.DirtyBytes > 0 {
		m.SetBy = "--dirty-bytes"
	}
	return m
}
