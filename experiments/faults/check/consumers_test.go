package check

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// withConsumer is clean() plus consumer g1 polling every message in order,
// partition by partition, and a drain.
func withConsumer() []Event {
	evs := clean()
	var polls []Event
	for _, e := range evs {
		if e.Type == TypeRead && e.Reader == "c1" {
			p := e
			p.Reader, p.Poll = "g1", len(polls)+1
			polls = append(polls, p)
		}
	}
	evs = append(evs, polls...)
	return append(evs, Event{Type: TypeDrain, Reader: "group", Target: "g1,g2"})
}

func isPoll(p int, seq int64) func(Event) bool {
	return func(e Event) bool { return e.Poll > 0 && e.Producer == p && e.Seq == seq }
}

// TestPlantedConsumerAnomalies plants each consumer anomaly in a clean
// history with a consumer and checks that exactly that one is found.
func TestPlantedConsumerAnomalies(t *testing.T) {
	if r := Check(withConsumer()); !r.Valid() {
		t.Fatalf("clean history with a consumer: %v", r.Anomalies)
	}
	tests := []struct {
		name, kind string
		plant      func(t *testing.T, evs []Event) []Event
		detail     string
	}{
		{"poll-skip: a poll jumps over a message", PollSkip, func(t *testing.T, evs []Event) []Event {
			// The message is read by the final readers but never by g1:
			// unseen too; that is counted apart below.
			return slices.Delete(evs, index(t, evs, isPoll(1, 7)), index(t, evs, isPoll(1, 7))+1)
		}, "skipping 1 messages from offset 300"},
		{"nonmonotonic-poll: a poll goes back", NonmonotonicPoll, func(t *testing.T, evs []Event) []Event {
			// After g1's last poll of t-0, p1/s3 again.
			e := evs[index(t, evs, isPoll(1, 3))]
			e.Poll = 1000
			return slices.Insert(evs, index(t, evs, isPoll(1, 20))+1, e)
		}, "polled offset 100 (poll 1000) after offset 950"},
		{"unseen: acknowledged, never polled", Unseen, func(t *testing.T, evs []Event) []Event {
			// The last message of t-1: nothing after it to skip to.
			return slices.DeleteFunc(evs, isPoll(2, 20))
		}, "p2/s20"},
		{"refused-but-appended", RefusedAppended, func(t *testing.T, evs []Event) []Event {
			i := index(t, evs, func(e Event) bool { return e.Type == TypeSend && e.Producer == 2 && e.Seq == 5 })
			evs[i].Outcome, evs[i].Refused, evs[i].At = Failed, true, nil
			return evs
		}, "refused (NotEnoughReplicas), read at offset 200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(tt.plant(t, withConsumer()))
			got := 0
			for _, a := range r.Anomalies {
				if a.Kind == tt.kind {
					got++
					if !strings.Contains(a.String(), tt.detail) {
						t.Errorf("got %v, want one mentioning %q", a, tt.detail)
					}
				} else if !(tt.kind == PollSkip && a.Kind == Unseen) {
					t.Errorf("unexpected %v", a)
				}
			}
			if got != 1 || r.Counts[tt.kind] != 1 || !strings.Contains(r.Verdict(), tt.kind+" 1") {
				t.Errorf("want one %s, got %v; verdict %q", tt.kind, r.Anomalies, r.Verdict())
			}
		})
	}
}

// TestConsumerRebalance: after a rebalance a consumer may start again
// below where it was (its group's last commit) and read on: not
// nonmonotonic-poll; without the rebalance it is. Without a drain, a
// message no consumer polled is not unseen.
func TestConsumerRebalance(t *testing.T) {
	evs := withConsumer()
	var again []Event
	for seq := int64(3); seq <= 20; seq++ {
		e := evs[index(t, evs, isPoll(1, seq))]
		e.Poll += 1000
		again = append(again, e)
	}
	rebalanced := append(slices.Clone(evs), Event{Type: TypeRebalance, Reader: "g1", Target: "t-0"})
	if r := Check(append(rebalanced, again...)); !r.Valid() {
		t.Errorf("after a rebalance: %v", r.Anomalies)
	}
	if r := Check(append(evs, again...)); r.Counts[NonmonotonicPoll] != 1 || len(r.Anomalies) != 1 {
		t.Errorf("without a rebalance: %v", r.Anomalies)
	}
	evs = slices.DeleteFunc(withConsumer(), func(e Event) bool { return e.Type == TypeDrain || isPoll(2, 20)(e) })
	if r := Check(evs); !r.Valid() {
		t.Errorf("no drain: %v", r.Anomalies)
	}
}

// TestRetriedDuplicate: a message the producer library sent twice (a retry
// after an answer that never came) and read at two offsets is a duplicate,
// still reported in the duplicate count, but not promised (delivery at
// least once): the trial stays VALID. Before, it made the trial ANOMALIES,
// as every safe cell of make faults was.
func TestRetriedDuplicate(t *testing.T) {
	evs := clean()
	i := index(t, evs, func(e Event) bool { return e.Type == TypeSend && e.Producer == 1 && e.Seq == 20 })
	evs[i].Attempts = 2
	evs = append(evs, ReadEvent("c1", TP{"t", 0}, 100000, Payload(ID{1, 20}, msgSize)),
		ReadEvent("c2", TP{"t", 0}, 100000, Payload(ID{1, 20}, msgSize)))
	r := Check(evs)
	if !r.Valid() || r.Counts[Duplicate] != 0 || r.Retried != 1 || len(r.Unpromised) != 1 ||
		!strings.Contains(r.Verdict(), "duplicate 1 (1 retried, not promised)") || !strings.Contains(r.Verdict(), "not promised 1") {
		t.Fatalf("verdict %q; anomalies %v", r.Verdict(), r.Anomalies)
	}
	u := r.Unpromised[0]
	if u.Kind != Duplicate || u.ID != (ID{1, 20}) || !u.Unpromised || !strings.Contains(u.Detail, "sent 2 times") ||
		!strings.Contains(u.String(), "a retry's copy") {
		t.Errorf("not promised: %v", u)
	}
}

// TestUnexplainedDuplicate: a copy no retry explains stays an anomaly: a
// message sent once and read at two offsets, and a third copy of a message
// sent twice (its retry explains one extra copy, not two).
func TestUnexplainedDuplicate(t *testing.T) {
	evs := clean()
	evs = append(evs, ReadEvent("c1", TP{"t", 0}, 100000, Payload(ID{1, 20}, msgSize)))
	r := Check(evs)
	if r.Valid() || r.Counts[Duplicate] != 1 || r.Retried != 0 || len(r.Unpromised) != 0 ||
		!strings.Contains(r.Verdict(), "duplicate 1;") {
		t.Errorf("sent once: verdict %q; anomalies %v", r.Verdict(), r.Anomalies)
	}

	i := index(t, evs, func(e Event) bool { return e.Type == TypeSend && e.Producer == 1 && e.Seq == 20 })
	evs[i].Attempts = 2
	evs = append(evs, ReadEvent("c1", TP{"t", 0}, 200000, Payload(ID{1, 20}, msgSize)))
	r = Check(evs)
	if r.Status() != StatusAnomalies || r.Counts[Duplicate] != 1 || r.Retried != 1 || len(r.Anomalies) != 1 ||
		r.Anomalies[0].Offset != 200000 || r.Unpromised[0].Offset != 100000 ||
		!strings.Contains(r.Verdict(), "duplicate 2 (1 retried, not promised)") {
		t.Errorf("sent twice, three copies: verdict %q; anomalies %v; not promised %v", r.Verdict(), r.Anomalies, r.Unpromised)
	}
}

// TestStrandedConsumer: a consumer that stood above the floor of a power
// loss everywhere when it struck is left inside a message of the rewritten
// log; what it then leaves unread is not promised. A consumer below the
// floor has no such excuse.
func TestStrandedConsumer(t *testing.T) {
	evs := withConsumer()
	floor := *evs[index(t, evs, func(e Event) bool { return e.Type == TypeSend && e.Producer == 1 && e.Seq == 15 })].At
	for i := range evs {
		if evs[i].Poll > 0 {
			evs[i].Wall = t0
		}
	}
	cut := Event{Type: TypeCut, Name: "lose-tail-all", Broker: 1, Topic: "t", Partition: 0, Offset: floor,
		Start: t0, End: t0.Add(time.Millisecond), Everywhere: true}
	// g1 never polls p1/s20 (the last of t-0: no skip); it stood at
	// p1/s19, above the floor, when the power went.
	unseen := slices.DeleteFunc(slices.Clone(evs), isPoll(1, 20))
	r := Check(append(unseen, cut))
	if !r.Valid() || len(r.Unpromised) != 1 || r.Unpromised[0].Kind != Unseen {
		t.Errorf("stranded: %v; not promised %v", r.Anomalies, r.Unpromised)
	}
	// Its polls all at or below the floor: promised.
	low := slices.DeleteFunc(slices.Clone(unseen), func(e Event) bool { return e.Poll > 0 && e.Partition == 0 && e.Offset > floor })
	if r := Check(append(low, cut)); r.Counts[Unseen] != 5 {
		t.Errorf("below the floor: %v", r.Anomalies)
	}
}

// TestUnseenByTheGroup: a message the drained group never polled is unseen
// even when another consumer (not of the group) read it.
func TestUnseenByTheGroup(t *testing.T) {
	evs := withConsumer()
	i := index(t, evs, isPoll(2, 20))
	evs[i].Reader = "simple-1"
	r := Check(evs)
	if r.Counts[Unseen] != 1 || len(r.Anomalies) != 1 || r.Anomalies[0].ID != (ID{2, 20}) {
		t.Errorf("anomalies %v", r.Anomalies)
	}
}
