package log

import (
	"context"
	"errors"
	"time"
)

// Run runs the flush scheduler (every log.default.flush.scheduler.interval.ms,
// FlushDue) and the retention scheduler (every log.cleanup.interval.mins,
// DeleteOldSegments) until ctx ends, then returns nil. Their errors are
// logged: a log whose flush failed refuses writes (ErrFailed), the others go
// on. Run does not close the Manager; call Close after Run returns.
func (m *Manager) Run(ctx context.Context) error {
	flushC, stopFlush := m.newTicker(m.cfg.FlushSchedulerInterval)
	defer stopFlush()
	cleanC, stopClean := m.newTicker(m.cfg.CleanupInterval)
	defer stopClean()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-flushC:
			if err := m.FlushDue(); err != nil {
				m.cfg.Logger.Error("time-based flush", "err", err)
			}
		case <-cleanC:
			if n, err := m.DeleteOldSegments(); err != nil {
				m.cfg.Logger.Error("retention", "deleted", n, "err", err)
			}
		}
	}
}

// newTicker uses the Clock's ticker if it has one.
func (m *Manager) newTicker(d time.Duration) (<-chan time.Time, func()) {
	if t, ok := m.cfg.Clock.(Ticker); ok {
		return t.NewTicker(d)
	}
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// FlushDue flushes every log that has unflushed messages and whose topic's
// flush interval (topic.flush.intervals.ms or log.default.flush.interval.ms)
// has passed since its last flush. It is one tick of Run's flush scheduler.
func (m *Manager) FlushDue() error {
	now := m.cfg.Clock.Now()
	var errs []error
	for _, l := range m.allLogs() {
		if err := l.flushIfDue(now); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DeleteOldSegments applies retention (Log.DeleteOldSegments) to every log
// and returns how many segments it deleted. It is one tick of Run's
// retention scheduler.
func (m *Manager) DeleteOldSegments() (int, error) {
	total := 0
	var errs []error
	for _, l := range m.allLogs() {
		n, err := l.DeleteOldSegments()
		total += n
		if err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}
