package faults

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/experiments/faults/check"
)

// history makes a small trial history: one producer on one partition
// acknowledged every 100 ms except for a gap from 1 s to 3 s, read back
// whole, and a kill window over the gap.
func history(t0 time.Time) []check.Event {
	evs := []check.Event{{Type: check.TypeMeta, Seed: 5, Config: map[string]string{"nemesis": Kill, "setup": "safe", "length": "4s"}}}
	var reads []check.Event
	seq := int64(0)
	for ms := 0; ms < 4000; ms += 100 {
		if ms > 1000 && ms < 3000 {
			continue
		}
		seq++
		at := t0.Add(time.Duration(ms) * time.Millisecond)
		evs = append(evs, check.Event{Type: check.TypeSend, Producer: 1, Seq: seq, Topic: "t", Outcome: check.OK, Start: at, End: at.Add(time.Millisecond)})
		reads = append(reads, check.ReadEvent("r", check.TP{Topic: "t"}, seq*100, check.Payload(check.ID{Producer: 1, Seq: seq}, 20)))
	}
	evs = append(evs, reads...)
	evs = append(evs, check.Event{Type: check.TypeEnd, Reader: "r", Topic: "t", Offset: (seq + 1) * 100},
		check.Event{Type: check.TypeNemesis, Name: Kill, Target: "broker2", Start: t0.Add(time.Second), End: t0.Add(3 * time.Second)})
	return evs
}

func TestOutage(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	if got, want := Outage(history(t0)), 2*time.Second; got != want {
		t.Errorf("outage %v, want %v", got, want)
	}
	if got := Outage(nil); got != 0 {
		t.Errorf("outage of nothing %v", got)
	}
}

func TestRereport(t *testing.T) {
	out := t.TempDir()
	dir := TrialDir(out, Kill, "safe", 5)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	if err := writeHistory(filepath.Join(dir, "history.jsonl"), history(t0)); err != nil {
		t.Fatal(err)
	}
	s, err := Rereport(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cells) != 1 || len(s.Cells[0].Trials) != 1 {
		t.Fatalf("cells %+v", s.Cells)
	}
	r := s.Cells[0].Trials[0]
	if !r.Check.Valid() || r.Config.Seed != 5 || r.Outage != 2*time.Second || len(r.Windows) != 1 ||
		r.Windows[0].Broker != 2 || r.Windows[0].Start != time.Second {
		t.Errorf("result %+v windows %+v", r, r.Windows)
	}
	b, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| kill | safe | 1 | 0 | 0 | 21 |", "2.0 s (2.0 s)", "seed 5 kill safe: VALID"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "timeline.png")); err != nil {
		t.Errorf("timeline: %v", err)
	}
	if _, err := Rereport(t.TempDir()); err == nil {
		t.Error("rereport of an empty directory: no error")
	}
}

// TestFailover: the failover runs from the kill-leader fault's start to the
// end of the first write to partition 0 sent after it and acknowledged.
func TestFailover(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	evs := history(t0)
	if _, ok := Failover(evs); ok {
		t.Error("a kill fault measured as a leader's")
	}
	for i := range evs {
		if evs[i].Type == check.TypeNemesis {
			evs[i].Name = KillLeader
		}
	}
	// The gap runs 1 s to 3 s; the first write after it is acknowledged
	// 1 ms after it was sent at 3.0 s.
	if d, ok := Failover(evs); !ok || d != 2*time.Second+time.Millisecond {
		t.Errorf("failover %v %v, want 2.001s", d, ok)
	}
	// A write acknowledged after the kill but sent before it does not
	// count: it went to the old leader.
	evs = append(evs, check.Event{Type: check.TypeSend, Producer: 1, Seq: 99, Topic: "t", Outcome: check.OK,
		Start: t0.Add(999 * time.Millisecond), End: t0.Add(1500 * time.Millisecond)})
	if d, _ := Failover(evs); d != 2*time.Second+time.Millisecond {
		t.Errorf("failover %v with an old write", d)
	}
}

// TestRefusing: refusal spells run from the first refused write to the end
// of the next acknowledged one; the largest total over the partitions.
func TestRefusing(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	send := func(p int32, ms int, outcome string) check.Event {
		return check.Event{Type: check.TypeSend, Topic: "t", Partition: p, Outcome: outcome, Start: at(ms), End: at(ms + 10)}
	}
	evs := []check.Event{
		send(0, 0, check.OK), send(0, 100, check.Failed), send(0, 200, check.Failed), send(0, 300, check.OK), // 100..310
		send(0, 400, check.Unknown), send(0, 500, check.Failed), send(0, 600, check.OK), // 500..610
		send(1, 0, check.Failed), send(1, 50, check.Failed), // 0..60, never acknowledged again
	}
	if got, want := Refusing(evs), 320*time.Millisecond; got != want {
		t.Errorf("refusing %v, want %v", got, want)
	}
	if got := Refusing(history(t0)); got != 0 {
		t.Errorf("refusing in a history without refusals: %v", got)
	}
}

func TestQuantile(t *testing.T) {
	ds := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if Quantile(ds, 0.5) != 5 || Quantile(ds, 0.99) != 10 || Quantile(ds, 0) != 1 || Quantile(nil, 0.5) != 0 {
		t.Errorf("quantiles %v %v %v", Quantile(ds, 0.5), Quantile(ds, 0.99), Quantile(ds, 0))
	}
}
