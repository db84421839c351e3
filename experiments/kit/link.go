package kit

import (
	"context"
	"log/slog"
	"time"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/testbed"
)

// linkSampleInterval is how often a run's link is read: one tc process per
// reading, ~8 ms of CPU, so ~4% of a core at this rate.
const linkSampleInterval = 200 * time.Millisecond

// steadyLow and steadyHigh bound the steady-state window of a run: from the
// moment steadyLow of its bytes had crossed the link to the moment steadyHigh
// had. Process start-up, connection set-up, a JVM's warm-up and the drain at
// the end fall outside it.
const (
	steadyLow  = 0.1
	steadyHigh = 0.9
	// minSteadySamples is the fewest readings the window must contain.
	minSteadySamples = 3
)

// LinkWatch measures the client's link during one timed driver run and
// records it in the run: the bytes in each direction, and the utilisation of
// the direction the messages travel (client to broker for a producer, broker
// to client for a consumer) over the run's steady-state window.
//
// It watches the driver process only, not the whole measurement: a consumer
// run on the emulated testbed first reads the log untimed (waitVisible), and
// those bytes are not the run's.
type LinkWatch struct {
	counter  *testbed.LinkCounter
	received bool // the messages flow toward the client (a consumer run)
	rate     float64
	run      *results.Run
	log      *slog.Logger

	base    testbed.LinkStats
	start   time.Time
	stop    chan struct{} // closed by end: the sampling goroutine returns
	done    chan struct{} // closed by the sampling goroutine when it has returned
	samples []perf.Sample // written by the sampling goroutine until done
	failed  bool
}

// WatchLink returns a LinkWatch for run, or nil where there is no link to
// watch (loopback) or the run is not a measurement (no phase: waitVisible's
// untimed read).
func (tb *Testbed) WatchLink(run *results.Run, log *slog.Logger) *LinkWatch {
	if tb == nil || tb.clientLink == nil || run == nil || run.Phase == "" {
		return nil
	}
	return &LinkWatch{counter: tb.clientLink, received: run.Phase == results.Consume,
		rate: tb.LinkBitsPerSec, run: run, log: log}
}

// begin reads the counters and starts sampling the messages' direction. A nil
// watch does nothing.
func (w *LinkWatch) begin(ctx context.Context) {
	if w == nil {
		return
	}
	var err error
	t0 := time.Now()
	if w.base, err = w.counter.Read(ctx); err != nil {
		w.fail(err)
		return
	}
	w.start = t0.Add(time.Since(t0) / 2)
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	w.samples = []perf.Sample{{}}
	go w.sample(ctx)
}

// sample reads the messages' direction every linkSampleInterval until stop.
// A reading takes a tc process, milliseconds on a busy machine: it is dated
// at the middle of the read, not at the tick, so that the delay does not
// shift the steady-state window's ends.
func (w *LinkWatch) sample(ctx context.Context) {
	defer close(w.done)
	t := time.NewTicker(linkSampleInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		t0 := time.Now()
		n, err := w.direction(ctx)
		if err != nil {
			continue // a missed reading only coarsens the interpolation
		}
		mid := t0.Add(time.Since(t0) / 2)
		w.samples = append(w.samples, perf.Sample{T: mid.Sub(w.start).Seconds(), Messages: int64(n)})
	}
}

// direction reads the bytes moved in the messages' direction since begin.
func (w *LinkWatch) direction(ctx context.Context) (uint64, error) {
	if w.received {
		n, err := w.counter.Received(ctx)
		return n - w.base.Received, err
	}
	n, err := w.counter.Sent(ctx)
	return n - w.base.Sent, err
}

// end stops sampling and records the link in the run.
func (w *LinkWatch) end(ctx context.Context) {
	if w == nil || w.failed {
		return
	}
	close(w.stop)
	<-w.done
	w.stop = nil
	t0 := time.Now()
	after, err := w.counter.Read(ctx)
	if err != nil {
		w.fail(err)
		return
	}
	mid := t0.Add(time.Since(t0) / 2)
	w.run.LinkBytesSent = after.Sent - w.base.Sent
	w.run.LinkBytesReceived = after.Received - w.base.Received
	data := w.run.LinkBytesSent
	if w.received {
		data = w.run.LinkBytesReceived
	}
	samples := append(w.samples, perf.Sample{T: mid.Sub(w.start).Seconds(), Messages: int64(data)})
	if u, secs, ok := steadyUtilisation(samples, w.rate); ok {
		w.run.LinkUtilisation, w.run.LinkSteadySeconds = u, secs
	}
}

func (w *LinkWatch) fail(err error) {
	w.failed = true
	w.log.Warn("reading the link counters", "run", w.run.ID, "err", err)
	if w.stop != nil {
		close(w.stop)
		<-w.done
	}
}

// TimedUtilisation is the messages' direction's bytes over the driver's own
// timed seconds and the link rate: the mean over the whole timed run, start-up
// and drain included, beside the steady-state figure.
func TimedUtilisation(run results.Run, bitsPerSec float64) float64 {
	if bitsPerSec <= 0 || run.Result.Seconds <= 0 {
		return 0
	}
	data := run.LinkBytesSent
	if run.Phase == results.Consume {
		data = run.LinkBytesReceived
	}
	return float64(data) * 8 / run.Result.Seconds / bitsPerSec
}

// steadyUtilisation is the utilisation of a link over the steady-state window
// of a transfer, given cumulative byte counts over time (Sample.Messages holds
// bytes): the bytes between the moments steadyLow and steadyHigh of the total
// had crossed, found by linear interpolation between samples, over the time
// between those moments and the link's rate. ok is false when nothing moved or
// the window has no length or too few readings inside it.
func steadyUtilisation(samples []perf.Sample, bitsPerSec float64) (util, seconds float64, ok bool) {
	if len(samples) < 2 || bitsPerSec <= 0 {
		return 0, 0, false
	}
	total := float64(samples[len(samples)-1].Messages)
	if total <= 0 {
		return 0, 0, false
	}
	lo, hi := crossing(samples, steadyLow*total), crossing(samples, steadyHigh*total)
	if hi <= lo {
		return 0, 0, false
	}
	// Interpolation assumes a steady rate between samples; a window with
	// fewer readings inside it than minSteadySamples (a transfer shorter than
	// about a second) would mostly measure where the transfer began and ended
	// within a sampling interval.
	inside := 0
	for _, s := range samples {
		if s.T > lo && s.T < hi {
			inside++
		}
	}
	if inside < minSteadySamples {
		return 0, 0, false
	}
	return (steadyHigh - steadyLow) * total * 8 / (hi - lo) / bitsPerSec, hi - lo, true
}

// crossing is the time at which the cumulative count first reached q,
// interpolated linearly within the sampling interval in which it did.
func crossing(samples []perf.Sample, q float64) float64 {
	for i, s := range samples {
		if float64(s.Messages) < q {
			continue
		}
		if i == 0 {
			return s.T
		}
		p := samples[i-1]
		dn := float64(s.Messages - p.Messages)
		if dn <= 0 {
			return s.T
		}
		return p.T + (s.T-p.T)*(q-float64(p.Messages))/dn
	}
	return samples[len(samples)-1].T
}
