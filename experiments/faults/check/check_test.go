package check

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)

const msgSize = 40

// clean builds a valid history: two producers on two partitions of topic
// "t", every message acknowledged and read once by each of two readers,
// and three replicas of each partition that agree.
func clean() []Event {
	var evs []Event
	evs = append(evs, Event{Type: TypeMeta, Seed: 7, Config: map[string]string{"acks": "1"}})
	offsets := map[TP]int64{}
	var reads []Event
	for seq := int64(1); seq <= 20; seq++ {
		for p := 1; p <= 2; p++ {
			tp := TP{"t", int32(p - 1)}
			at := offsets[tp]
			evs = append(evs, Event{Type: TypeSend, Producer: p, Seq: seq, Topic: tp.Topic, Partition: tp.Partition,
				Acks: 1, Outcome: OK, Start: t0.Add(time.Duration(seq) * time.Millisecond), End: t0.Add(time.Duration(seq+1) * time.Millisecond), At: &at})
			reads = append(reads, ReadEvent("", tp, offsets[tp], Payload(ID{p, seq}, msgSize)))
			offsets[tp] += msgSize + 10
		}
	}
	for _, reader := range []string{"c1", "c2"} {
		for _, r := range reads {
			r.Reader = reader
			evs = append(evs, r)
		}
		for tp, end := range offsets {
			evs = append(evs, Event{Type: TypeEnd, Reader: reader, Topic: tp.Topic, Partition: tp.Partition, Offset: end})
		}
	}
	for tp, end := range offsets {
		for b := int32(1); b <= 3; b++ {
			evs = append(evs, Event{Type: TypeReplica, Topic: tp.Topic, Partition: tp.Partition, Broker: b, HW: end, SHA256: "aaaa"})
		}
	}
	evs = append(evs, Event{Type: TypeNemesis, Name: "kill", Target: "broker1", Start: t0, End: t0.Add(time.Second)})
	return evs
}

// index returns the position of the first event matching f.
func index(t *testing.T, evs []Event, f func(Event) bool) int {
	t.Helper()
	i := slices.IndexFunc(evs, f)
	if i < 0 {
		t.Fatal("no event matches")
	}
	return i
}

func isRead(reader string, p int, seq int64) func(Event) bool {
	return func(e Event) bool {
		return e.Type == TypeRead && e.Reader == reader && e.Producer == p && e.Seq == seq
	}
}

func TestCleanHistoryIsValid(t *testing.T) {
	r := Check(clean())
	if !r.Valid() {
		t.Fatalf("clean history: %v", r.Anomalies)
	}
	if r.Sent != 40 || r.Acked != 40 || r.Distinct != 40 || r.Read != 80 || r.Replicas != 6 || len(r.Incomplete) != 0 {
		t.Errorf("counts: %+v", r)
	}
	if !strings.HasPrefix(r.Verdict(), "VALID: 40 sent (40 acknowledged") {
		t.Errorf("verdict %q", r.Verdict())
	}
}

// TestPlantedAnomalies plants each kind of anomaly in a clean history and
// checks the checker finds exactly it, once.
func TestPlantedAnomalies(t *testing.T) {
	tests := []struct {
		name   string
		kind   string
		plant  func(t *testing.T, evs []Event) []Event
		detail string
	}{
		{"lost: acknowledged, read by nobody", Lost, func(t *testing.T, evs []Event) []Event {
			evs = slices.DeleteFunc(evs, isRead("c1", 1, 5))
			return slices.DeleteFunc(evs, isRead("c2", 1, 5))
		}, "p1/s5"},
		{"lost: read while live, gone from the final reads", Lost, func(t *testing.T, evs []Event) []Event {
			// A live reader (no end event) saw p1/s5 before an election
			// that dropped it; the readers that read to the end did not.
			i := index(t, evs, isRead("c1", 1, 5))
			live := evs[i]
			live.Reader = "live"
			evs = slices.DeleteFunc(evs, isRead("c1", 1, 5))
			evs = slices.DeleteFunc(evs, isRead("c2", 1, 5))
			return append(evs, live)
		}, "absent from the final reads"},
		{"unexpected: never sent", Unexpected, func(t *testing.T, evs []Event) []Event {
			e := ReadEvent("c1", TP{"t", 0}, 100000, Payload(ID{9, 1}, msgSize))
			return append(evs, e)
		}, "p9/s1"},
		{"unexpected: garbage payload", Unexpected, func(t *testing.T, evs []Event) []Event {
			return append(evs, ReadEvent("c1", TP{"t", 0}, 100000, []byte("garbage")))
		}, "names no message"},
		{"unexpected: sent to another partition", Unexpected, func(t *testing.T, evs []Event) []Event {
			// p2's messages go to partition 1; one shows up in partition 0.
			return append(evs, ReadEvent("c1", TP{"t", 0}, 100000, Payload(ID{2, 3}, msgSize)))
		}, "sent to t-1"},
		{"duplicate: one message at two offsets", Duplicate, func(t *testing.T, evs []Event) []Event {
			return append(evs, ReadEvent("c1", TP{"t", 0}, 100000, Payload(ID{1, 20}, msgSize)))
		}, "p1/s20"},
		{"reordered: seqs swap offsets", Reordered, func(t *testing.T, evs []Event) []Event {
			for _, reader := range []string{"c1", "c2"} {
				i := index(t, evs, isRead(reader, 1, 7))
				j := index(t, evs, isRead(reader, 1, 8))
				evs[i].Offset, evs[j].Offset = evs[j].Offset, evs[i].Offset
			}
			// As the broker acknowledged them.
			isSend := func(seq int64) func(Event) bool {
				return func(e Event) bool { return e.Type == TypeSend && e.Producer == 1 && e.Seq == seq }
			}
			i, j := index(t, evs, isSend(7)), index(t, evs, isSend(8))
			evs[i].At, evs[j].At = evs[j].At, evs[i].At
			return evs
		}, "seq 7"},
		{"inconsistent: readers disagree on an offset", Inconsistent, func(t *testing.T, evs []Event) []Event {
			// c2 reads p3/s1 (sent, outcome unknown) where c1 read p1/s10:
			// what a reader saw before an unclean election and another after.
			i := index(t, evs, isRead("c2", 1, 10))
			evs[i].Producer, evs[i].Seq = 3, 1
			return append(evs, Event{Type: TypeSend, Producer: 3, Seq: 1, Topic: "t", Partition: 0, Outcome: Unknown})
		}, "offset"},
		{"diverged: replicas hash differently", Diverged, func(t *testing.T, evs []Event) []Event {
			i := index(t, evs, func(e Event) bool { return e.Type == TypeReplica && e.Broker == 2 && e.Partition == 1 })
			evs[i].SHA256 = "bbbb"
			return evs
		}, "broker 2"},
		{"diverged: a replica short of the end", Diverged, func(t *testing.T, evs []Event) []Event {
			// Broker 3's copy of t-1 ends 50 bytes before what the readers
			// read: it never caught up (issue 21 rule 4's follower).
			i := index(t, evs, func(e Event) bool { return e.Type == TypeReplica && e.Broker == 3 && e.Partition == 1 })
			evs[i].SHA256, evs[i].Held = "", evs[i].HW-50
			return evs
		}, "broker 3 ends at 950, short of the end 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := tt.plant(t, clean())
			r := Check(evs)
			if len(r.Anomalies) != 1 {
				t.Fatalf("want exactly one %s, got %d: %v", tt.kind, len(r.Anomalies), r.Anomalies)
			}
			a := r.Anomalies[0]
			if a.Kind != tt.kind || !strings.Contains(a.String(), tt.detail) {
				t.Errorf("got %v, want a %s mentioning %q", a, tt.kind, tt.detail)
			}
			for _, k := range Kinds {
				want := 0
				if k == tt.kind {
					want = 1
				}
				if r.Counts[k] != want {
					t.Errorf("count %s = %d, want %d", k, r.Counts[k], want)
				}
			}
			if r.Valid() || r.Status() != StatusAnomalies || !strings.HasPrefix(r.Verdict(), "ANOMALIES") || !strings.Contains(r.Verdict(), tt.kind+" 1") {
				t.Errorf("verdict %q", r.Verdict())
			}
		})
	}
}

func TestOutcomes(t *testing.T) {
	// Unacknowledged messages never read are not lost; read ones are counted.
	evs := clean()
	i := index(t, evs, func(e Event) bool { return e.Type == TypeSend && e.Producer == 1 && e.Seq == 3 })
	evs[i].Outcome = Unknown
	j := index(t, evs, func(e Event) bool { return e.Type == TypeSend && e.Producer == 1 && e.Seq == 4 })
	evs[j].Outcome = Failed
	k := index(t, evs, func(e Event) bool { return e.Type == TypeSend && e.Producer == 2 && e.Seq == 4 })
	evs[k].Outcome = Failed
	evs = slices.DeleteFunc(evs, func(e Event) bool {
		return e.Type == TypeRead && e.Producer == 2 && e.Seq == 4
	})
	r := Check(evs)
	if !r.Valid() {
		t.Fatalf("anomalies: %v", r.Anomalies)
	}
	if r.Acked != 37 || r.Unknown != 1 || r.Failed != 2 || r.UnknownRead != 1 || r.FailedRead != 1 || r.Vanished != 1 {
		t.Errorf("outcomes: %+v", r)
	}
	// A retry that succeeded keeps the acknowledgement: an ok then an
	// unknown send of the same message is acknowledged.
	evs = append(evs, Event{Type: TypeSend, Producer: 1, Seq: 5, Topic: "t", Partition: 0, Outcome: Unknown})
	if r := Check(evs); r.Acked != 37 || r.Sent != 40 {
		t.Errorf("retry: %+v", r)
	}
}

// TestIncomplete: a partition no reader read to its end makes the trial
// invalid (its outcome unknown), never valid.
func TestIncomplete(t *testing.T) {
	evs := slices.DeleteFunc(clean(), func(e Event) bool { return e.Type == TypeEnd && e.Partition == 1 })
	r := Check(evs)
	if r.Valid() || r.Status() != StatusInvalid || len(r.Incomplete) != 1 || r.Incomplete[0] != (TP{"t", 1}) {
		t.Errorf("incomplete %v status %v", r.Incomplete, r.Status())
	}
	if !strings.HasPrefix(r.Verdict(), "INVALID (no reader read t-1 to its end)") || !strings.Contains(r.Verdict(), "1 partitions not read to the end") {
		t.Errorf("verdict %q", r.Verdict())
	}
}

// TestInvalidTrial: a trial whose final read did not finish, or whose
// cluster never became healthy, is invalid whatever else it shows: with
// no anomaly it is not valid, and with one it is not counted as anomalous
// (its losses may be the unfinished read's).
func TestInvalidTrial(t *testing.T) {
	for _, tt := range []struct {
		name  string
		plant func([]Event) []Event
	}{
		{"nothing else wrong", func(evs []Event) []Event { return evs }},
		{"a loss besides", func(evs []Event) []Event {
			return slices.DeleteFunc(evs, func(e Event) bool { return e.Type == TypeRead && e.Producer == 1 && e.Seq == 5 })
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			evs := append(tt.plant(clean()),
				Event{Type: TypeInvalid, Error: "final2 did not finish reading t-0"},
				Event{Type: TypeInvalid, Error: "cluster not healthy a minute after the faults"})
			r := Check(evs)
			if r.Valid() || r.Status() != StatusInvalid || len(r.Invalid) != 2 {
				t.Fatalf("status %s, invalid %q", r.Status(), r.Invalid)
			}
			if want := "INVALID (final2 did not finish reading t-0; cluster not healthy a minute after the faults): "; !strings.HasPrefix(r.Verdict(), want) {
				t.Errorf("verdict %q, want prefix %q", r.Verdict(), want)
			}
		})
	}
}

// TestAckedOffsetReused: the broker acknowledged p1/s10 at an offset where
// the readers find another message (a replica that took over without it
// wrote there): inconsistent-offsets, besides the lost write.
func TestAckedOffsetReused(t *testing.T) {
	evs := clean()
	for _, reader := range []string{"c1", "c2"} {
		i := index(t, evs, isRead(reader, 1, 10))
		evs[i].Producer, evs[i].Seq = 3, 1
	}
	evs = append(evs, Event{Type: TypeSend, Producer: 3, Seq: 1, Topic: "t", Partition: 0, Outcome: Unknown})
	r := Check(evs)
	if r.Counts[Inconsistent] != 1 || r.Counts[Lost] != 1 || len(r.Anomalies) != 2 {
		t.Fatalf("anomalies %v", r.Anomalies)
	}
	if a := r.Anomalies[1]; a.Kind != Inconsistent || !strings.Contains(a.Detail, "acknowledged as p1/s10 and is p3/s1") {
		t.Errorf("got %v", a)
	}
}

// TestPowerLossEverywhere: writes lost above what every replica had
// flushed when all of them lost their tails at once are not promised:
// counted apart, the trial stays valid. A loss below that floor, or after
// a power loss on some replicas only, is a lost write.
func TestPowerLossEverywhere(t *testing.T) {
	evs := clean()
	floor := *evs[index(t, evs, func(e Event) bool { return e.Type == TypeSend && e.Producer == 1 && e.Seq == 15 })].At
	strike := t0.Add(time.Hour)
	cut := func(b int32, off int64, everywhere bool) Event {
		return Event{Type: TypeCut, Name: "lose-tail-all", Broker: b, Topic: "t", Partition: 0, Offset: off, Start: strike, Everywhere: everywhere}
	}
	lose := func(evs []Event, from, to int64) []Event {
		return slices.DeleteFunc(evs, func(e Event) bool { return e.Type == TypeRead && e.Producer == 1 && e.Seq >= from && e.Seq <= to })
	}
	// Replica 2 had flushed the least: its end is the floor.
	everywhere := []Event{cut(1, floor+500, true), cut(2, floor, true), cut(3, floor+50, true)}
	r := Check(append(lose(slices.Clone(evs), 15, 20), everywhere...))
	if !r.Valid() || len(r.Unpromised) != 6 || r.Counts[Lost] != 0 {
		t.Fatalf("status %s, %d not promised, anomalies %v", r.Status(), len(r.Unpromised), r.Anomalies)
	}
	if !strings.Contains(r.Verdict(), "not promised 6") || !strings.Contains(r.Unpromised[0].String(), "not promised") {
		t.Errorf("verdict %q; %v", r.Verdict(), r.Unpromised[0])
	}
	// The lost messages, read before the strike above the floor, and
	// p1/s21, written after it at the floor: its offset is below theirs
	// (nonmonotonic-send), not promised either.
	lost := lose(slices.Clone(evs), 15, 20)
	for seq := int64(15); seq <= 20; seq++ {
		lost = append(lost, ReadEvent("live", TP{"t", 0}, floor+seq*100, Payload(ID{1, seq}, msgSize)))
	}
	lost = append(lost, Event{Type: TypeSend, Producer: 1, Seq: 21, Topic: "t", Partition: 0, Outcome: OK, End: strike.Add(time.Second), At: &floor},
		ReadEvent("c1", TP{"t", 0}, floor, Payload(ID{1, 21}, msgSize)), ReadEvent("c2", TP{"t", 0}, floor, Payload(ID{1, 21}, msgSize)))
	r = Check(append(lost, everywhere...))
	if !r.Valid() || r.Counts[Reordered] != 0 || len(r.Unpromised) != 12 {
		t.Errorf("read, then lost: %s; %v; not promised %v", r.Status(), r.Anomalies, r.Unpromised)
	}
	// Below the floor: promised.
	r = Check(append(lose(slices.Clone(evs), 14, 20), everywhere...))
	if r.Counts[Lost] != 1 || len(r.Unpromised) != 6 || r.Anomalies[0].ID != (ID{1, 14}) {
		t.Errorf("below the floor: %v; not promised %d", r.Anomalies, len(r.Unpromised))
	}
	// Some replicas only: promised.
	r = Check(append(lose(slices.Clone(evs), 15, 20), cut(1, floor, false), cut(2, floor, false)))
	if r.Counts[Lost] != 6 || len(r.Unpromised) != 0 {
		t.Errorf("some replicas: %v; not promised %d", r.Anomalies, len(r.Unpromised))
	}
}

func TestManyLost(t *testing.T) {
	// Counts add up: drop every read of seqs 11..20 of producer 1.
	evs := slices.DeleteFunc(clean(), func(e Event) bool {
		return e.Type == TypeRead && e.Producer == 1 && e.Seq > 10
	})
	r := Check(evs)
	if r.Counts[Lost] != 10 || len(r.Anomalies) != 10 {
		t.Fatalf("lost %d anomalies %v", r.Counts[Lost], r.Anomalies)
	}
	for i, a := range r.Anomalies {
		if want := (ID{1, int64(11 + i)}); a.ID != want {
			t.Errorf("anomaly %d is %v, want %v", i, a.ID, want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	want := clean()
	for _, e := range want {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d events, wrote %d", len(got), len(want))
	}
	for i := range want {
		g, _ := json.Marshal(got[i])
		w, _ := json.Marshal(want[i])
		if string(g) != string(w) {
			t.Fatalf("event %d: got %+v want %+v", i, got[i], want[i])
		}
	}
	if r := Check(got); !r.Valid() {
		t.Errorf("round trip: %v", r.Anomalies)
	}
}

func TestReadErrors(t *testing.T) {
	for _, in := range []string{
		"{\"type\":\"send\"}\nnot json\n",
		"{\"type\":\"bogus\"}\n",
	} {
		if _, err := Read(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line") {
			t.Errorf("%q: err %v, want one naming the line", in, err)
		}
	}
}

func TestPayload(t *testing.T) {
	for _, id := range []ID{{1, 1}, {12, 123456789}} {
		for _, size := range []int{0, 10, 200} {
			b := Payload(id, size)
			if len(b) < size {
				t.Errorf("%v size %d: len %d", id, size, len(b))
			}
			got, ok := ParsePayload(b)
			if !ok || got != id {
				t.Errorf("%v size %d: parsed %v %v", id, size, got, ok)
			}
		}
	}
	for _, bad := range []string{"", "faults ", "faults p1 s", "faults p0 s1 ", "faults p1 s2 .x", "hello p1 s2 ", "faults p1 s-2 "} {
		if id, ok := ParsePayload([]byte(bad)); ok {
			t.Errorf("%q parsed as %v", bad, id)
		}
	}
}

func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, e := range clean()[:5] {
		if err := w.Write(e); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(buf.Bytes())
	f.Add([]byte("{\"type\":\"read\",\"offset\":-1}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		r := Check(evs)
		n := 0
		for _, c := range r.Counts {
			n += c
		}
		if n != len(r.Anomalies) {
			t.Fatalf("counts %v sum %d, %d anomalies", r.Counts, n, len(r.Anomalies))
		}
	})
}

func FuzzParsePayload(f *testing.F) {
	f.Add([]byte("faults p1 s2 ...."))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, ok := ParsePayload(b)
		if !ok {
			return
		}
		if again, ok := ParsePayload(Payload(id, len(b))); !ok || again != id {
			t.Fatalf("%q -> %v does not round trip", b, id)
		}
	})
}

// TestPowerLossAppliedBrokerByBroker: a power loss everywhere kills its
// brokers one after the other; until the last is dead the others go on
// acknowledging writes none of them will flush. Those acknowledgements
// (after the strike's Start, up to the cut's End) are not promised; one
// after the last broker died is. Before the fix the checker took the
// strike's Start as the bound and counted all six as lost-write (as it did
// the 20 of lose-tail-all seed 1).
func TestPowerLossAppliedBrokerByBroker(t *testing.T) {
	evs := clean()
	floor := *evs[index(t, evs, func(e Event) bool { return e.Type == TypeSend && e.Producer == 1 && e.Seq == 15 })].At
	// p1/s15..s20 are acknowledged at t0+16ms..t0+21ms.
	strike, dead := t0.Add(10*time.Millisecond), t0.Add(18*time.Millisecond)
	cut := func(b int32, off int64) Event {
		return Event{Type: TypeCut, Name: "lose-tail-all", Broker: b, Topic: "t", Partition: 0, Offset: off,
			Start: strike, End: dead, Everywhere: true}
	}
	evs = slices.DeleteFunc(evs, func(e Event) bool { return e.Type == TypeRead && e.Producer == 1 && e.Seq >= 15 })
	evs = append(evs, cut(1, floor+500), cut(2, floor), cut(3, floor+50))
	r := Check(evs)
	if len(r.Unpromised) != 3 || r.Counts[Lost] != 3 {
		t.Fatalf("not promised %v; anomalies %v", r.Unpromised, r.Anomalies)
	}
	for i, a := range r.Anomalies {
		if want := (ID{1, int64(18 + i)}); a.ID != want {
			t.Errorf("lost-write %d is %v, want %v (acknowledged after the last broker died)", i, a.ID, want)
		}
	}
	// A history written before cuts had an End: the strike's Start bounds.
	for i := range evs {
		if evs[i].Type == TypeCut {
			evs[i].End = time.Time{}
		}
	}
	if r := Check(evs); len(r.Unpromised) != 0 || r.Counts[Lost] != 6 {
		t.Errorf("without End: not promised %d, lost %d", len(r.Unpromised), r.Counts[Lost])
	}
}

// TestGivenUpSendAppendedLaterIsNotPromised: a producer's request that
// timed out (outcome unknown) before its next one was sent, and that the
// broker appended after that next one, is a nonmonotonic-send 0.8 does not
// promise against (no producer sequence numbers before 0.11's KIP-98): the
// soak's seed 362 (3 December), a wire producer's request stuck behind a
// slow leader for 4 s. Had the later request been sent before the earlier
// one was given up, the order would be promised.
func TestGivenUpSendAppendedLaterIsNotPromised(t *testing.T) {
	reorder := func(overlap bool) *Result {
		evs := clean()
		for _, reader := range []string{"c1", "c2"} {
			i, j := index(t, evs, isRead(reader, 1, 7)), index(t, evs, isRead(reader, 1, 8))
			evs[i].Offset, evs[j].Offset = evs[j].Offset, evs[i].Offset
		}
		isSend := func(seq int64) func(Event) bool {
			return func(e Event) bool { return e.Type == TypeSend && e.Producer == 1 && e.Seq == seq }
		}
		i, j := index(t, evs, isSend(7)), index(t, evs, isSend(8))
		evs[i].Outcome, evs[i].At, evs[i].Error = Unknown, nil, "i/o timeout"
		evs[j].At = &evs[index(t, evs, isRead("c1", 1, 8))].Offset
		evs[i].End = evs[j].Start
		if overlap {
			evs[i].End = evs[j].Start.Add(time.Millisecond)
		}
		return Check(evs)
	}
	r := reorder(false)
	if !r.Valid() || r.Counts[Reordered] != 0 || len(r.Unpromised) != 1 || r.Unpromised[0].Kind != Reordered ||
		!strings.Contains(r.Unpromised[0].Detail, "given up") {
		t.Errorf("given up before the next send: %s; anomalies %v; not promised %v", r.Status(), r.Anomalies, r.Unpromised)
	}
	if r := reorder(true); r.Counts[Reordered] != 1 {
		t.Errorf("given up after the next send began: %s; anomalies %v, want one nonmonotonic-send", r.Status(), r.Anomalies)
	}
}

// TestSendOnADroppedConnectionAppendedLaterIsNotPromised: a wire producer's
// message on a connection it dropped (a write timed out while the broker was
// paused), appended after a later message it sent on its next connection,
// is a nonmonotonic-send the 2011 broker does not promise against: it reads
// each connection in order, not two (the full matrix's pause x flush, seed
// 1: seq 1631, in the old connection's buffers, appended after seq 2910 on
// the new one). On one connection the same order is an anomaly, and so
// it is when the broker said where it put the earlier message.
func TestSendOnADroppedConnectionAppendedLaterIsNotPromised(t *testing.T) {
	reorder := func(early, late int, at bool) *Result {
		evs := clean()
		for _, reader := range []string{"c1", "c2"} {
			i, j := index(t, evs, isRead(reader, 1, 7)), index(t, evs, isRead(reader, 1, 8))
			evs[i].Offset, evs[j].Offset = evs[j].Offset, evs[i].Offset
		}
		for i, e := range evs {
			if e.Type == TypeSend && e.Producer == 1 {
				if !at || e.Seq != 7 {
					evs[i].At = nil
				}
				evs[i].Conn = early
				if e.Seq >= 8 {
					evs[i].Conn = late
				}
			}
		}
		return Check(evs)
	}
	r := reorder(1, 2, false)
	if !r.Valid() || r.Counts[Reordered] != 0 || len(r.Unpromised) != 1 || r.Unpromised[0].Kind != Reordered ||
		!strings.Contains(r.Unpromised[0].Detail, "sent on connection 1, dropped before seq 8 was sent on connection 2") {
		t.Errorf("two connections: %s; anomalies %v; not promised %v", r.Status(), r.Anomalies, r.Unpromised)
	}
	for _, conns := range [][2]int{{1, 1}, {0, 0}, {2, 1}} {
		if r := reorder(conns[0], conns[1], false); r.Counts[Reordered] != 1 || len(r.Unpromised) != 0 {
			t.Errorf("connections %v: %s; anomalies %v, want one nonmonotonic-send", conns, r.Status(), r.Anomalies)
		}
	}
	// The broker said where it put the earlier one (an acknowledged
	// replicated send): the order it answered is promised.
	if r := reorder(1, 2, true); r.Counts[Reordered] != 1 {
		t.Errorf("acknowledged at an offset: %s; anomalies %v, want a nonmonotonic-send", r.Status(), r.Anomalies)
	}
}
