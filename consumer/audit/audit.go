// Package audit is the consumer's side of the audit of paper §4: a Counter
// takes the monitoring events read from the audit topic and the audited
// messages read from any tier (the live cluster, the mirrored one), and
// reports, per time window and topic, how many messages the producers sent,
// how many arrived, which are missing and which arrived more than once, and
// the end-to-end latency from each message's creation time. The byte
// formats are broker/audit's; kafka-audit is the tool.
package audit

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/audit"
)

// Counter counts audited messages and monitoring events. It is safe for
// concurrent use.
type Counter struct {
	mu        sync.Mutex
	events    map[eventKey]audit.Event        // guarded by mu
	seen      map[sessionKey]map[uint64]*page // arrivals per sequence number; guarded by mu
	windows   map[windowKey]*windowTally      // guarded by mu
	unaudited map[string]int64                // per topic: payloads without an envelope; guarded by mu
	lengths   map[sessionKey]time.Duration    // window length per session, from its events; guarded by mu
	pending   map[sessionKey][]pendingArrival // arrivals before their session's first event; guarded by mu
	// announced is the sum of the counts of every event taken; AddEvent
	// keeps it within int64, so no sum Report makes can overflow. Guarded
	// by mu.
	announced int64
	refused   int64 // events AddEvent refused; guarded by mu
}

// ErrImpossibleCount is returned by AddEvent for an event whose count no
// producer can have, or that would take the sum of the announced counts
// past what an int64 holds; the event is not counted.
var ErrImpossibleCount = errors.New("audit: impossible count")

// eventKey identifies an event: a producer may publish a window in parts
// (producer/audit SendCreated), each with its own first sequence number.
type eventKey struct {
	topic   string
	session uint64
	start   int64
	first   uint64
}

type sessionKey struct {
	topic   string
	session uint64
}

type windowKey struct {
	topic string
	start int64
}

// windowTally is what arrived for one topic and window.
type windowTally struct {
	length   time.Duration
	received int64           // every arrival
	latency  []time.Duration // of first arrivals
}

// page counts the arrivals of pageLen consecutive sequence numbers,
// saturating at 255: sparse, so that a bogus sequence number costs one page.
type page [pageLen]uint8

const pageLen = 4096

type pendingArrival struct {
	seq     uint64
	created time.Time
	lat     time.Duration
}

// NewCounter returns an empty Counter.
func NewCounter() *Counter {
	return &Counter{
		events:    map[eventKey]audit.Event{},
		seen:      map[sessionKey]map[uint64]*page{},
		windows:   map[windowKey]*windowTally{},
		unaudited: map[string]int64{},
		lengths:   map[sessionKey]time.Duration{},
		pending:   map[sessionKey][]pendingArrival{},
	}
}

// AddEvent records a monitoring event. A repeated event (the audit topic
// read twice, or mirrored twice) counts once. An event with a count above
// audit.MaxCount, one whose sequence numbers run past 2^64-1, or one that
// would take the sum of every announced count past math.MaxInt64 is
// refused with ErrImpossibleCount and not counted: such counts can only be
// forged or corrupt, and summed as they come they would wrap and hide
// missing messages.
func (c *Counter) AddEvent(e audit.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := eventKey{e.Topic, e.Session, e.Start.UnixNano(), e.First}
	if _, ok := c.events[k]; ok {
		return nil
	}
	switch {
	case e.Count > audit.MaxCount || e.Count > 0 && e.First+e.Count-1 < e.First:
		c.refused++
		return fmt.Errorf("%w: event of %s from %s announces %d messages from sequence number %d", ErrImpossibleCount, e.Topic, e.Host, e.Count, e.First)
	case int64(e.Count) > math.MaxInt64-c.announced:
		c.refused++
		return fmt.Errorf("%w: event of %s from %s announces %d messages; with the %d announced before, the sum overflows", ErrImpossibleCount, e.Topic, e.Host, e.Count, c.announced)
	}
	c.announced += int64(e.Count)
	c.events[k] = e
	sk := sessionKey{e.Topic, e.Session}
	if _, ok := c.lengths[sk]; !ok {
		c.lengths[sk] = e.Length
		for _, p := range c.pending[sk] {
			c.arriveLocked(sk, p.seq, p.created, p.lat)
		}
		delete(c.pending, sk)
	}
	return nil
}

// Refused returns how many events AddEvent refused.
func (c *Counter) Refused() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused
}

// AddEventPayload decodes a payload of the audit topic and records it.
func (c *Counter) AddEventPayload(b []byte) error {
	e, err := audit.DecodeEvent(b)
	if err != nil {
		return err
	}
	return c.AddEvent(e)
}

// AddMessage records a message of topic received at time received. A
// payload without an envelope is counted as unaudited and reported with
// its error (audit.ErrNotEnvelope, or the decoder's error for a damaged one).
func (c *Counter) AddMessage(topic string, payload []byte, received time.Time) error {
	h, _, err := audit.DecodeEnvelope(payload)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.unaudited[topic]++
		return err
	}
	sk := sessionKey{topic, h.Session}
	lat := received.Sub(h.Time)
	if _, ok := c.lengths[sk]; !ok {
		// The window length comes with the session's events; until one
		// arrives, keep the arrival aside (a consumer may well read a
		// message before the event of its window).
		c.pending[sk] = append(c.pending[sk], pendingArrival{h.Seq, h.Time, lat})
		return nil
	}
	c.arriveLocked(sk, h.Seq, h.Time, lat)
	return nil
}

func (c *Counter) arriveLocked(sk sessionKey, seq uint64, created time.Time, lat time.Duration) {
	pages := c.seen[sk]
	if pages == nil {
		pages = map[uint64]*page{}
		c.seen[sk] = pages
	}
	pg := pages[seq/pageLen]
	if pg == nil {
		pg = new(page)
		pages[seq/pageLen] = pg
	}
	n := &pg[seq%pageLen]
	first := *n == 0
	if *n < 255 {
		*n++
	}
	l := c.lengths[sk]
	wk := windowKey{sk.topic, audit.Window(created, l).UnixNano()}
	w := c.windows[wk]
	if w == nil {
		w = &windowTally{length: l}
		c.windows[wk] = w
	}
	w.received++
	if first {
		w.latency = append(w.latency, lat)
	}
}

// Row is the audit of one topic in one window, summed over its producers.
type Row struct {
	Topic  string
	Start  time.Time
	Length time.Duration
	// Sent is the sum of the producers' counts (their events); Producers
	// is how many producers sent them: distinct sessions, each one
	// producer instance (producer/audit.Producer), however many events it
	// published the window in.
	Sent      int64
	Producers int
	// Received counts every arrival of a message created in the window;
	// Distinct each message once.
	Received int64
	Distinct int64
	// Missing is Sent minus the announced messages that arrived; Duplicates
	// is arrivals beyond the first of each message.
	Missing    int64
	Duplicates int64
	// Unannounced counts distinct messages of the window whose producer
	// has published no event for it (yet): the window is still open, or
	// its event was lost or not read.
	Unannounced int64
	// Latency percentiles and mean (creation to receipt) of first arrivals.
	P50, P90, P99, Max, Mean time.Duration

	sessions map[uint64]bool // the producers counted in Producers
}

// JSONRow is a Row as kafka-audit --json prints it, one JSON object a
// line: Type "window" (with the window's start and length) or "total";
// durations in milliseconds. Tools that read kafka-audit's output
// (experiments/pipeline) decode it into this type.
type JSONRow struct {
	Type       string  `json:"type"`
	Window     string  `json:"window,omitempty"`
	WindowUnix float64 `json:"window_unix,omitempty"`
	LengthS    float64 `json:"length_s,omitempty"`
	Topic      string  `json:"topic"`
	Producers  int     `json:"producers"`
	Tally
	LatencyMs
}

// Tally is the audit's verdict on a window (or the total): what the
// producers' events announce, what arrived, and the difference.
type Tally struct {
	Sent        int64 `json:"sent"`
	Received    int64 `json:"received"`
	Missing     int64 `json:"missing"`
	Duplicates  int64 `json:"duplicates"`
	Unannounced int64 `json:"unannounced"`
}

// LatencyMs is a latency distribution in milliseconds: percentiles, the
// largest and the mean.
type LatencyMs struct {
	P50ms  float64 `json:"p50_ms"`
	P90ms  float64 `json:"p90_ms"`
	P99ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	MeanMs float64 `json:"mean_ms"`
}

// JSON returns r as a JSONRow of type kind ("window" adds the window's
// start and length; "total" has none).
func (r Row) JSON(kind string) JSONRow {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	j := JSONRow{Type: kind, Topic: r.Topic, Producers: r.Producers,
		Tally:     Tally{Sent: r.Sent, Received: r.Received, Missing: r.Missing, Duplicates: r.Duplicates, Unannounced: r.Unannounced},
		LatencyMs: LatencyMs{P50ms: ms(r.P50), P90ms: ms(r.P90), P99ms: ms(r.P99), MaxMs: ms(r.Max), MeanMs: ms(r.Mean)}}
	if kind == "window" {
		j.Window = r.Start.UTC().Format(time.RFC3339Nano)
		j.WindowUnix = float64(r.Start.UnixNano()) / 1e9
		j.LengthS = r.Length.Seconds()
	}
	return j
}

// Report returns a row per topic and window that has an event or an
// arrival, ordered by window and topic.
func (c *Counter) Report() []Row {
	c.mu.Lock()
	defer c.mu.Unlock()
	rows := map[windowKey]*Row{}
	row := func(topic string, start time.Time, length time.Duration) *Row {
		k := windowKey{topic, start.UnixNano()}
		r := rows[k]
		if r == nil {
			r = &Row{Topic: topic, Start: start, Length: length}
			rows[k] = r
		}
		return r
	}
	announced := map[windowKey]int64{} // distinct arrivals covered by events
	for _, e := range c.events {
		r := row(e.Topic, e.Start, e.Length)
		r.Sent += int64(e.Count)
		if r.sessions == nil {
			r.sessions = map[uint64]bool{}
		}
		if !r.sessions[e.Session] {
			r.sessions[e.Session] = true
			r.Producers++
		}
		got := countSeen(c.seen[sessionKey{e.Topic, e.Session}], e.First, e.Count)
		r.Missing += int64(e.Count) - got
		announced[windowKey{e.Topic, e.Start.UnixNano()}] += got
	}
	for wk, w := range c.windows {
		r := row(wk.topic, time.Unix(0, wk.start), w.length)
		r.Received += w.received
		r.Distinct += int64(len(w.latency))
		lat := slices.Clone(w.latency)
		slices.Sort(lat)
		r.P50, r.P90, r.P99 = Percentile(lat, 0.50), Percentile(lat, 0.90), Percentile(lat, 0.99)
		if len(lat) > 0 {
			r.Max = lat[len(lat)-1]
			var sum time.Duration
			for _, l := range lat {
				sum += l
			}
			r.Mean = sum / time.Duration(len(lat))
		}
	}
	for sk, ps := range c.pending {
		// Sessions without any event: all unannounced, windows unknown;
		// report them in one row per topic at the zero time.
		r := row(sk.topic, time.Unix(0, 0), 0)
		distinct := map[uint64]bool{}
		for _, p := range ps {
			distinct[p.seq] = true
		}
		r.Received += int64(len(ps))
		r.Distinct += int64(len(distinct))
	}
	out := make([]Row, 0, len(rows))
	for k, r := range rows {
		r.Duplicates = r.Received - r.Distinct
		r.Unannounced = r.Distinct - announced[k]
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Row) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		if a.Topic < b.Topic {
			return -1
		}
		if a.Topic > b.Topic {
			return 1
		}
		return 0
	})
	return out
}

// countSeen counts the sequence numbers in [first, first+n) that arrived,
// visiting only the pages that exist.
func countSeen(pages map[uint64]*page, first, n uint64) int64 {
	end := first + n
	if end < first { // wrapped: a bogus event
		end = ^uint64(0)
	}
	var got int64
	for pn, pg := range pages {
		lo, hi := pn*pageLen, pn*pageLen+pageLen
		lo, hi = max(lo, first), min(hi, end)
		for q := lo; q < hi; q++ {
			if pg[q%pageLen] > 0 {
				got++
			}
		}
	}
	return got
}

// Unaudited returns, per topic, how many payloads had no valid envelope.
func (c *Counter) Unaudited() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.unaudited))
	for t, n := range c.unaudited {
		out[t] = n
	}
	return out
}

// Latencies returns the latencies of every first arrival, with the creation
// times' windows, for a figure of latency over time: one slice per window
// start (Unix nanoseconds).
func (c *Counter) Latencies() map[int64][]time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int64][]time.Duration{}
	for wk, w := range c.windows {
		out[wk.start] = append(out[wk.start], w.latency...)
	}
	return out
}

// Totals sums rows; its Producers counts each producer once, however
// many rows it sent in.
func Totals(rows []Row) Row {
	var t Row
	t.Topic = "total"
	t.sessions = map[uint64]bool{}
	for _, r := range rows {
		t.Sent += r.Sent
		for s := range r.sessions {
			t.sessions[s] = true
		}
		t.Producers = len(t.sessions)
		t.Received += r.Received
		t.Distinct += r.Distinct
		t.Missing += r.Missing
		t.Duplicates += r.Duplicates
		t.Unannounced += r.Unannounced
		t.Max = max(t.Max, r.Max)
	}
	return t
}

// Percentile returns the q-quantile (0 < q <= 1) of sorted by the
// nearest-rank method, or 0 for none.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999999) - 1
	i = min(max(i, 0), len(sorted)-1)
	return sorted[i]
}

// String formats a row as kafka-audit prints it.
func (r Row) String() string {
	return fmt.Sprintf("%s %s sent=%d received=%d missing=%d duplicates=%d unannounced=%d p50=%v p99=%v",
		r.Start.UTC().Format(time.RFC3339), r.Topic, r.Sent, r.Received, r.Missing, r.Duplicates, r.Unannounced, r.P50, r.P99)
}

// Topics returns the audited topics named by the events, sorted.
func (c *Counter) Topics() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	set := map[string]bool{}
	for k := range c.events {
		set[k.topic] = true
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}
