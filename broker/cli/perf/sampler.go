package perf

import (
	"sync"
	"time"
)

// Sampler records a cumulative counter at a fixed interval from a goroutine it
// owns; Stop ends that goroutine, waits for it and returns the samples.
type Sampler struct {
	start time.Time
	count func() int64
	stop  chan struct{}
	done  chan struct{}

	mu      sync.Mutex // guards samples
	samples []Sample
}

// StartSampler begins sampling count every interval, timed from start.
func StartSampler(start time.Time, interval time.Duration, count func() int64) *Sampler {
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	s := &Sampler{start: start, count: count, stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop(interval)
	return s
}

func (s *Sampler) loop(interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.add(now)
		}
	}
}

func (s *Sampler) add(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, Sample{T: now.Sub(s.start).Seconds(), Messages: s.count()})
}

// Stop ends sampling, records a final sample at end and returns all samples in
// time order. Calling Stop twice returns the same samples.
func (s *Sampler) Stop(end time.Time) []Sample {
	select {
	case <-s.stop:
	default:
		close(s.stop)
		<-s.done
		s.add(end)
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Sample, len(s.samples))
	copy(out, s.samples)
	return out
}

// Rate is the throughput over one sampling interval ending at T.
type Rate struct {
	// T is the end of the interval, in seconds since timing started.
	T float64
	// MsgsPerSec is the messages moved in the interval divided by its length.
	MsgsPerSec float64
}

// Rates turns cumulative samples into per-interval throughput, the quantity the
// paper plots against time. Intervals of zero length are skipped.
func Rates(samples []Sample) []Rate {
	var out []Rate
	prevT, prevN := 0.0, int64(0)
	for _, s := range samples {
		dt := s.T - prevT
		if dt <= 0 {
			continue
		}
		out = append(out, Rate{T: s.T, MsgsPerSec: float64(s.Messages-prevN) / dt})
		prevT, prevN = s.T, s.Messages
	}
	return out
}
