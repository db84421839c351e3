package perf

import (
	"io"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/netdb11/kafka/broker/cli/progress"
)

// StartProgress shows a progress bar of done out of total messages on w when
// w is a terminal, redrawn every 200 ms by a goroutine it owns, and returns
// the function that stops it and waits for it (idempotent). On anything but
// a terminal it shows nothing, so that a driver's output stays parseable.
func StartProgress(w io.Writer, total int64, what string, done *atomic.Int64) (stop func()) {
	if !progress.IsTerminal(w) {
		return func() {}
	}
	bar := progressbar.NewOptions64(total, progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what), progressbar.OptionShowCount(),
		progressbar.OptionShowIts(), progressbar.OptionSetItsString("msg"),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				_ = bar.Finish()
				return
			case <-tick.C:
				_ = bar.Set64(done.Load())
			}
		}
	}()
	stopped := false
	return func() {
		if !stopped {
			stopped = true
			close(quit)
			<-finished
		}
	}
}
