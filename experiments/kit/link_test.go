package kit

import (
	"math"
	"testing"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/testbed"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

func TestSteadyUtilisation(t *testing.T) {
	const gbit = 1e9
	for _, tc := range []struct {
		name     string
		samples  []perf.Sample
		util     float64
		secs     float64
		wantFail bool
	}{
		// 1 s of start-up with nothing on the link, then 125 MB/s (the whole
		// link) for 2 s, then 1 s of idle tail: the window sees only the
		// transfer.
		{name: "idle head and tail are outside the window", samples: []perf.Sample{
			{T: 0, Messages: 0}, {T: 1, Messages: 0}, {T: 1.5, Messages: 62.5e6}, {T: 2, Messages: 125e6}, {T: 2.5, Messages: 187.5e6},
			{T: 3, Messages: 250e6}, {T: 4, Messages: 250e6},
		}, util: 1, secs: 1.6},
		// Half the rate throughout.
		{name: "constant rate", samples: []perf.Sample{
			{T: 0, Messages: 0}, {T: 0.25, Messages: 15.625e6}, {T: 0.5, Messages: 31.25e6}, {T: 0.75, Messages: 46.875e6}, {T: 1, Messages: 62.5e6},
		}, util: 0.5, secs: 0.8},
		// A few handshake bytes early do not stretch the window.
		{name: "handshake bytes then transfer", samples: []perf.Sample{
			{T: 0, Messages: 0}, {T: 0.2, Messages: 300}, {T: 0.45, Messages: 25e6 + 300}, {T: 0.7, Messages: 50e6 + 300},
			{T: 0.95, Messages: 75e6 + 300}, {T: 1.2, Messages: 100e6 + 300},
		}, util: 0.8, secs: 0.8},
		// A transfer inside two sampling intervals has too few readings to
		// place its start and end.
		{name: "too short to sample", samples: []perf.Sample{
			{T: 0, Messages: 0}, {T: 0.2, Messages: 20e6}, {T: 0.4, Messages: 45e6}, {T: 0.6, Messages: 45e6},
		}, wantFail: true},
		{name: "nothing moved", samples: []perf.Sample{{T: 0}, {T: 1}}, wantFail: true},
		{name: "one sample", samples: []perf.Sample{{T: 1, Messages: 10}}, wantFail: true},
		// Everything counted at one instant: no window.
		{name: "no window", samples: []perf.Sample{{T: 1}, {T: 1, Messages: 10}}, wantFail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, secs, ok := steadyUtilisation(tc.samples, gbit)
			if ok == tc.wantFail {
				t.Fatalf("ok = %v (util %v over %v s)", ok, u, secs)
			}
			if tc.wantFail {
				return
			}
			if math.Abs(u-tc.util) > 1e-3 || math.Abs(secs-tc.secs) > 1e-3 {
				t.Errorf("utilisation %v over %v s, want %v over %v s", u, secs, tc.util, tc.secs)
			}
		})
	}
	if _, _, ok := steadyUtilisation([]perf.Sample{{T: 0}, {T: 1, Messages: 10}}, 0); ok {
		t.Error("a link without a rate has a utilisation")
	}
}

func TestCrossing(t *testing.T) {
	s := []perf.Sample{{T: 0, Messages: 0}, {T: 1, Messages: 0}, {T: 2, Messages: 100}, {T: 3, Messages: 100}}
	for q, want := range map[float64]float64{0: 0, 10: 1.1, 50: 1.5, 100: 2, 1000: 3} {
		if got := crossing(s, q); !near(got, want) {
			t.Errorf("crossing(%v) = %v, want %v", q, got, want)
		}
	}
}

// The direction counted follows the phase: a producer's messages leave the
// client, a consumer's arrive.
func TestTimedUtilisationDirection(t *testing.T) {
	r := results.Run{Key: results.Key{Phase: results.Produce}, LinkBytesSent: 125e6, LinkBytesReceived: 1e6}
	r.Result.Seconds = 2
	if u := TimedUtilisation(r, 1e9); !near(u, 0.5) {
		t.Errorf("producer: %v, want 0.5", u)
	}
	r.Phase = results.Consume
	if u := TimedUtilisation(r, 1e9); !near(u, 0.004) {
		t.Errorf("consumer: %v, want 0.004", u)
	}
	if u := TimedUtilisation(r, 0); u != 0 {
		t.Errorf("loopback: %v, want 0", u)
	}
	r.Result.Seconds = 0
	if u := TimedUtilisation(r, 1e9); u != 0 {
		t.Errorf("no timed seconds: %v, want 0", u)
	}
}

// A consumer run is watched in the direction toward the client, a producer
// run in the other, a run that is not a measurement not at all.
func TestWatchLinkDirection(t *testing.T) {
	tb := &Testbed{LinkBitsPerSec: 1e9}
	if w := tb.WatchLink(&results.Run{Key: results.Key{Phase: results.Consume}}, nil); w != nil {
		t.Error("watching a link on a testbed without one")
	}
	tb.clientLink = &testbed.LinkCounter{}
	if w := tb.WatchLink(&results.Run{Key: results.Key{Phase: results.Consume}}, nil); w == nil || !w.received {
		t.Errorf("consumer: %+v, want a watch of the received direction", w)
	}
	if w := tb.WatchLink(&results.Run{Key: results.Key{Phase: results.Produce}}, nil); w == nil || w.received {
		t.Errorf("producer: %+v, want a watch of the sent direction", w)
	}
	if w := tb.WatchLink(&results.Run{}, nil); w != nil {
		t.Error("watching an untimed read")
	}
	var nilWatch *LinkWatch
	nilWatch.begin(t.Context()) // a nil watch does nothing
	nilWatch.end(t.Context())
}
