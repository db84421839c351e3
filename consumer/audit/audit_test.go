package audit

import (
	"errors"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/audit"
)

func envelope(t *testing.T, created time.Time, session, seq uint64) []byte {
	t.Helper()
	b, err := audit.AppendEnvelope(nil, audit.Header{Time: created, Session: session, Seq: seq, Host: "fe-1"}, []byte("page view"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCounterPlantedGapsAndDuplicates plants missing and duplicate messages
// in known windows and checks every count exactly.
func TestCounterPlantedGapsAndDuplicates(t *testing.T) {
	const w = 10 * time.Second
	w0 := time.Unix(1_700_000_000, 0) // a multiple of 10 s
	w1 := w0.Add(w)
	c := NewCounter()
	// Session 1: window 0 has seqs 0..99, window 1 seqs 100..149.
	// Session 2 (another producer): window 0 seqs 0..9.
	recv := w0.Add(30 * time.Second)
	for q := uint64(0); q < 150; q++ {
		created := w0.Add(time.Duration(q) * 50 * time.Millisecond)
		if q >= 100 {
			created = w1.Add(time.Duration(q-100) * 10 * time.Millisecond)
		}
		switch {
		case q == 7 || q == 42 || q == 120: // lost
			continue
		case q == 3: // three times: two duplicates
			c.AddMessage("pv", envelope(t, created, 1, q), recv)
			c.AddMessage("pv", envelope(t, created, 1, q), recv.Add(time.Second))
		case q == 130: // twice
			c.AddMessage("pv", envelope(t, created, 1, q), recv)
		}
		if err := c.AddMessage("pv", envelope(t, created, 1, q), recv); err != nil {
			t.Fatal(err)
		}
	}
	for q := uint64(0); q < 10; q++ {
		c.AddMessage("pv", envelope(t, w0.Add(time.Second), 2, q), w0.Add(3*time.Second))
	}
	// Plain payloads are counted as unaudited, not as messages.
	if err := c.AddMessage("pv", []byte("plain"), recv); !errors.Is(err, audit.ErrNotEnvelope) {
		t.Fatalf("plain payload: err = %v", err)
	}
	// The events arrive after the messages, and one twice (read twice).
	c.AddEvent(audit.Event{Topic: "pv", Host: "fe-1", Session: 1, Start: w0, Length: w, Count: 100, First: 0})
	c.AddEvent(audit.Event{Topic: "pv", Host: "fe-1", Session: 1, Start: w1, Length: w, Count: 50, First: 100})
	c.AddEvent(audit.Event{Topic: "pv", Host: "fe-1", Session: 1, Start: w1, Length: w, Count: 50, First: 100})
	c.AddEvent(audit.Event{Topic: "pv", Host: "fe-2", Session: 2, Start: w0, Length: w, Count: 10, First: 0})
	// Session 3 never publishes an event: its messages are unannounced.
	c.AddMessage("pv", envelope(t, w0, 3, 0), recv)

	rows := c.Report()
	if len(rows) != 3 {
		t.Fatalf("rows = %+v, want 3 (no-event row, window 0, window 1)", rows)
	}
	type want struct {
		start                                                 time.Time
		sent, received, missing, dups, unannounced, producers int64
	}
	wants := []want{
		{time.Unix(0, 0), 0, 1, 0, 0, 1, 0},
		{w0, 110, 100 - 2 + 2 + 10, 2, 2, 0, 2},
		{w1, 50, 50 - 1 + 1, 1, 1, 0, 1},
	}
	for i, w := range wants {
		r := rows[i]
		got := want{r.Start, r.Sent, r.Received, r.Missing, r.Duplicates, r.Unannounced, int64(r.Producers)}
		if !got.start.Equal(w.start) || got.sent != w.sent || got.received != w.received || got.missing != w.missing ||
			got.dups != w.dups || got.unannounced != w.unannounced || got.producers != w.producers {
			t.Errorf("row %d = %+v\nwant %+v", i, got, w)
		}
	}
	if tot := Totals(rows); tot.Missing != 3 || tot.Duplicates != 3 || tot.Sent != 160 {
		t.Errorf("totals %+v, want missing 3, duplicates 3, sent 160", tot)
	}
	if u := c.Unaudited()["pv"]; u != 1 {
		t.Errorf("unaudited = %d, want 1", u)
	}
	// Window 1: created w1 + 10ms x (q-100), received w1+20s; 49 first
	// arrivals (120 lost), the 25th smallest latency is q=125s: 19.75 s.
	r := rows[2]
	if r.Max != 20*time.Second || r.P50 != 19750*time.Millisecond {
		t.Errorf("window 1 latency p50 %v max %v", r.P50, r.Max)
	}
	if got := c.Topics(); len(got) != 1 || got[0] != "pv" {
		t.Errorf("Topics = %v", got)
	}
}

// TestCounterBogusSequence: a huge sequence number or count costs no memory
// or time beyond one page.
func TestCounterBogusSequence(t *testing.T) {
	c := NewCounter()
	c.AddEvent(audit.Event{Topic: "t", Host: "h", Session: 1, Start: time.Unix(0, 0), Length: time.Second, Count: 1 << 40, First: 1})
	c.AddMessage("t", envelope(t, time.Unix(0, 5), 1, ^uint64(0)-1), time.Unix(1, 0))
	rows := c.Report()
	if tot := Totals(rows); tot.Received != 1 || tot.Missing != 1<<40 || tot.Unannounced != 1 {
		t.Fatalf("totals %+v", tot)
	}
}

func TestPercentile(t *testing.T) {
	s := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5}, {0.9, 9}, {0.99, 10}, {1, 10}, {0.01, 1}} {
		if got := Percentile(s, c.q); got != c.want {
			t.Errorf("Percentile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if Percentile(nil, 0.5) != 0 {
		t.Error("Percentile of nothing")
	}
}

// TestCounterRefusesImpossibleCounts: an event of 10 messages of which 7
// arrived leaves 3 missing, whatever forged events come with it. Before,
// an event with count 2^64-3 was summed as -3 and the report said 0
// missing; two counts of 2^63-1 wrapped the sums the same way.
func TestCounterRefusesImpossibleCounts(t *testing.T) {
	w0 := time.Unix(1_700_000_000, 0)
	c := NewCounter()
	if err := c.AddEvent(audit.Event{Topic: "t", Host: "h", Session: 1, Start: w0, Length: time.Second, Count: 10, First: 0}); err != nil {
		t.Fatal(err)
	}
	for q := uint64(0); q < 7; q++ {
		if err := c.AddMessage("t", envelope(t, w0, 1, q), w0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	for _, forged := range []audit.Event{
		{Topic: "t", Host: "x", Session: 2, Start: w0, Length: time.Second, Count: ^uint64(0) - 2},
		{Topic: "t", Host: "x", Session: 3, Start: w0, Length: time.Second, Count: 5, First: ^uint64(0) - 1},
		{Topic: "t", Host: "x", Session: 4, Start: w0, Length: time.Second, Count: 1<<63 - 1 - 10 + 1},
	} {
		if err := c.AddEvent(forged); !errors.Is(err, ErrImpossibleCount) {
			t.Errorf("forged count %d from %d: %v, want ErrImpossibleCount", forged.Count, forged.First, err)
		}
	}
	// The largest count that still fits with the 10 announced before.
	if err := c.AddEvent(audit.Event{Topic: "u", Host: "x", Session: 5, Start: w0, Length: time.Second, Count: 1<<63 - 1 - 10}); err != nil {
		t.Fatal(err)
	}
	if c.Refused() != 3 {
		t.Errorf("Refused = %d, want 3", c.Refused())
	}
	for _, r := range c.Report() {
		if r.Topic == "t" && (r.Sent != 10 || r.Missing != 3) {
			t.Errorf("row %+v, want sent 10, missing 3", r)
		}
	}
	if tot := Totals(c.Report()); tot.Sent != 1<<63-1 || tot.Missing != 1<<63-1-10+3 {
		t.Errorf("totals sent %d missing %d", tot.Sent, tot.Missing)
	}
}
