package check

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Anomaly kinds, as Result.Counts names them.
const (
	// Lost (Jepsen's lost-write): acknowledged ("ok") and never read by
	// any reader, or read (by a reader following the log while it was
	// written) but absent from what every reader that read the partition
	// to its end found: gone from the final log.
	Lost = "lost-write"
	// Unexpected: read, but never sent (or sent to another partition, or a
	// payload that names no message).
	Unexpected = "unexpected"
	// Duplicate: one message read at more than one position; each extra
	// position counts once. A copy a producer's retry explains is not
	// promised (Result.Retried).
	Duplicate = "duplicate"
	// Reordered (Jepsen's nonmonotonic-send): within one partition, a
	// message of a producer read at a higher offset than a later message
	// (higher seq) of the same producer.
	Reordered = "nonmonotonic-send"
	// Inconsistent (Jepsen's inconsistent-offsets): one (partition,
	// offset) read as different messages by different readers, or read as
	// another message than the one the broker acknowledged there.
	Inconsistent = "inconsistent-offsets"
	// Diverged: replicas of one partition whose bytes below the same high
	// watermark hash differently (each partition counts once), or a replica
	// that ends short of that end (each such replica counts once).
	Diverged = "diverged"
)

// Kinds lists the anomaly kinds in report order.
var Kinds = []string{Lost, Unexpected, Duplicate, Reordered, Inconsistent, Diverged,
	PollSkip, NonmonotonicPoll, Unseen, RefusedAppended, Invariant}

// LogKinds are the kinds judged before the consumers were recorded (issue
// 23): reports written then list these.
var LogKinds = Kinds[:6]

// Legacy maps the kinds' names before they took Jepsen's (histories and
// reports written then) to today's.
var Legacy = map[string]string{"lost": Lost, "reordered": Reordered, "inconsistent": Inconsistent}

// LegacyKinds is Kinds as reports written before Jepsen's names listed them.
var LegacyKinds = []string{"lost", Unexpected, Duplicate, "reordered", "inconsistent", Diverged}

// Anomaly is one finding.
type Anomaly struct {
	Kind   string
	TP     TP
	ID     ID    // the message, where there is one
	Offset int64 // where it was read, where that matters
	Detail string
	// Unpromised marks an anomaly the configuration does not promise to
	// avoid: a write lost, or an offset reused, above what every replica
	// had flushed when every member of the ISR lost its unflushed tail at
	// once (a power loss everywhere; see TypeCut), a strong-isr by a
	// replica that lost its own tail before any controller acted on its
	// restart (Event.Unacted), or a duplicate that a producer's retry
	// explains (delivery at least once, paper §3.3).
	Unpromised bool `json:",omitempty"`
}

func (a Anomaly) String() string {
	s := a.Kind + " " + a.TP.String()
	if a.ID != (ID{}) {
		s += " " + a.ID.String()
	}
	if a.Detail != "" {
		s += ": " + a.Detail
	}
	switch {
	case a.Unpromised && a.Kind == Duplicate:
		s += " (not promised: a retry's copy; delivery is at least once)"
	case a.Unpromised:
		s += " (not promised: above what every replica had flushed when all lost their tails)"
	}
	return s
}

type pos struct {
	tp     TP
	offset int64
}

type readAt struct {
	pos
	reader string
	id     ID
	raw    string
}

// Check judges a history.
func Check(evs []Event) *Result {
	r := &Result{Counts: map[string]int{}}
	for _, k := range Kinds {
		r.Counts[k] = 0
	}
	add := func(a Anomaly) {
		r.Anomalies = append(r.Anomalies, a)
		r.Counts[a.Kind]++
	}

	type sent struct {
		tp      TP
		outcome string
		start   time.Time
		end     time.Time
		at      *int64
		refused bool
		tries   int
		conn    int
	}
	sends := map[ID]sent{}
	var sendOrder []ID
	var reads []readAt
	ended := map[TP]bool{}
	complete := map[TP]map[string]bool{} // readers that reached each partition's end
	replicas := map[TP][]Event{}
	acked := map[pos]ID{} // where the broker said it put a message
	var cuts, invs []Event
	for _, e := range evs {
		tp := TP{e.Topic, e.Partition}
		switch e.Type {
		case TypeSend:
			id := ID{e.Producer, e.Seq}
			if _, dup := sends[id]; !dup {
				sendOrder = append(sendOrder, id)
			}
			// A message sent twice (a retry) keeps its best outcome.
			prev, seen := sends[id]
			if !seen || rank(e.Outcome) > rank(prev.outcome) {
				sends[id] = sent{tp, e.Outcome, e.Start, e.End, e.At, e.Refused, e.Attempts, e.Conn}
			}
			if e.Outcome == OK && e.At != nil {
				acked[pos{tp, *e.At}] = id
			}
		case TypeRead:
			ra := readAt{pos: pos{tp, e.Offset}, reader: e.Reader, raw: e.Raw}
			if e.Raw == "" {
				ra.id = ID{e.Producer, e.Seq}
			}
			reads = append(reads, ra)
		case TypeEnd:
			ended[tp] = true
			if complete[tp] == nil {
				complete[tp] = map[string]bool{}
			}
			complete[tp][e.Reader] = true
		case TypeReplica:
			replicas[tp] = append(replicas[tp], e)
		case TypeInvalid:
			r.Invalid = append(r.Invalid, e.Error)
		case TypeCut:
			cuts = append(cuts, e)
		case TypeInvariant:
			invs = append(invs, e)
		}
	}
	r.Read = len(reads)
	r.Replicas = 0
	for _, rs := range replicas {
		r.Replicas += len(rs)
	}

	// Where each message was read, and what each position holds.
	where := map[ID][]pos{}
	at := map[pos][]readAt{}
	final := map[ID]bool{} // read by a reader that reached its partition's end
	for _, ra := range reads {
		at[ra.pos] = append(at[ra.pos], ra)
		if ra.raw != "" {
			continue
		}
		if s, ok := sends[ra.id]; ok && s.tp != ra.tp {
			continue // unexpected there; it does not stand for the message
		}
		if complete[ra.tp][ra.reader] {
			final[ra.id] = true
		}
		if !slices.Contains(where[ra.id], ra.pos) {
			where[ra.id] = append(where[ra.id], ra.pos)
		}
	}
	r.Distinct = len(where)

	for _, id := range sendOrder {
		s := sends[id]
		switch s.outcome {
		case OK:
			r.Acked++
		case Failed:
			r.Failed++
		default:
			r.Unknown++
		}
		if len(where[id]) == 0 {
			if s.outcome == OK {
				add(Anomaly{Kind: Lost, TP: s.tp, ID: id, Detail: "acknowledged, never read"})
			} else {
				r.Vanished++
			}
			continue
		}
		if s.outcome == OK && len(complete[s.tp]) > 0 && !final[id] {
			add(Anomaly{Kind: Lost, TP: s.tp, ID: id, Offset: where[id][0].offset,
				Detail: fmt.Sprintf("acknowledged, read at offset %d, absent from the final reads", where[id][0].offset)})
		}
		switch s.outcome {
		case Failed:
			r.FailedRead++
		case Unknown, "":
			r.UnknownRead++
		}
	}
	r.Sent = r.Acked + r.Failed + r.Unknown

	// Unexpected: per position, so one bad message read by two readers counts once.
	positions := make([]pos, 0, len(at))
	for p := range at {
		positions = append(positions, p)
	}
	slices.SortFunc(positions, comparePos)
	for _, p := range positions {
		ras := at[p]
		first := ras[0]
		switch {
		case first.raw != "":
			add(Anomaly{Kind: Unexpected, TP: p.tp, Offset: p.offset,
				Detail: fmt.Sprintf("payload names no message (%s) at offset %d", first.raw, p.offset)})
		default:
			s, ok := sends[first.id]
			switch {
			case !ok:
				add(Anomaly{Kind: Unexpected, TP: p.tp, ID: first.id, Offset: p.offset,
					Detail: fmt.Sprintf("never sent, read at offset %d", p.offset)})
			case s.tp != p.tp:
				add(Anomaly{Kind: Unexpected, TP: p.tp, ID: first.id, Offset: p.offset,
					Detail: fmt.Sprintf("sent to %s, read at offset %d", s.tp, p.offset)})
			}
		}
		// Inconsistent: the broker acknowledged another message here.
		if id, ok := acked[p]; ok && (first.raw != "" || id != first.id) {
			add(Anomaly{Kind: Inconsistent, TP: p.tp, Offset: p.offset,
				Detail: fmt.Sprintf("offset %d was acknowledged as %s and is %s to %s", p.offset, id, name(first), first.reader)})
		}
		// Inconsistent: readers disagree on what this position holds.
		for _, ra := range ras[1:] {
			if ra.id != first.id || ra.raw != first.raw {
				add(Anomaly{Kind: Inconsistent, TP: p.tp, Offset: p.offset,
					Detail: fmt.Sprintf("offset %d is %s to %s and %s to %s",
						p.offset, name(first), first.reader, name(ra), ra.reader)})
				break
			}
		}
	}

	// Duplicates. A message the producer sent n times (Event.Attempts, a
	// retry after an answer it did not get) may be appended n times: its
	// first n-1 extra copies are the retries', which delivery at least once
	// (paper §3.3; 0.8's producer has no idempotence) allows. They are
	// counted apart (Result.Retried, not promised); a copy beyond them is
	// the system's own, an anomaly.
	ids := make([]ID, 0, len(where))
	for id := range where {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, compareID)
	for _, id := range ids {
		ps := where[id]
		if len(ps) < 2 {
			continue
		}
		slices.SortFunc(ps, comparePos)
		n := sends[id].tries
		retried := ""
		if n > 1 {
			retried = fmt.Sprintf(" (sent %d times: the producer retried)", n)
		}
		for i, p := range ps[1:] {
			a := Anomaly{Kind: Duplicate, TP: p.tp, ID: id, Offset: p.offset,
				Detail: fmt.Sprintf("read at %s offset %d and at %s offset %d%s", ps[0].tp, ps[0].offset, p.tp, p.offset, retried)}
			if i < n-1 {
				a.Unpromised = true
				r.Retried++
				r.Unpromised = append(r.Unpromised, a)
				continue
			}
			add(a)
		}
	}

	// Reordering: within one partition and producer, in offset order, the
	// seqs must rise. A message below the highest seq already seen is out
	// of order (a duplicate's second copy is already counted; skip it).
	type key struct {
		tp       TP
		producer int
	}
	seqs := map[key][]readAt{}
	for _, p := range positions {
		ra := at[p][0]
		if ra.raw != "" {
			continue
		}
		k := key{p.tp, ra.id.Producer}
		seqs[k] = append(seqs[k], ra)
	}
	keys := make([]key, 0, len(seqs))
	for k := range seqs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(compareTP(a.tp, b.tp), cmp.Compare(a.producer, b.producer))
	})
	for _, k := range keys {
		var top readAt
		have := false
		for _, ra := range seqs[k] {
			if ps := where[ra.id]; len(ps) == 0 || ps[0] != ra.pos {
				continue // misplaced, or a duplicate's later copy
			}
			if have && ra.id.Seq < top.id.Seq {
				a := Anomaly{Kind: Reordered, TP: k.tp, ID: ra.id, Offset: ra.offset,
					Detail: fmt.Sprintf("seq %d at offset %d after seq %d at offset %d", ra.id.Seq, ra.offset, top.id.Seq, top.offset)}
				early, late := sends[ra.id], sends[top.id]
				givenUp := early.outcome != OK && !early.end.IsZero() && !late.start.Before(early.end)
				dropped := early.conn != 0 && late.conn != 0 && early.conn < late.conn && early.at == nil
				if givenUp || dropped {
					// The producer gave the earlier request up (a timeout,
					// a broken connection) before it sent the later one,
					// and the broker appended it after all: 0.8's protocol
					// has no producer sequence numbers (idempotence is
					// 0.11's KIP-98), so order is promised only among
					// requests the producer did not give up on. So too a
					// request on a connection the producer dropped before
					// it opened the later one's: a broker reads each
					// connection in order (paper §3.3's order is a
					// partition's), not two connections, and what the old
					// one's buffers held (a paused broker reads it on
					// SIGCONT) may be appended after the new one's;
					// unless the broker said where it put the earlier
					// one (an acknowledged replicated send).
					a.Unpromised = true
					if givenUp {
						a.Detail += fmt.Sprintf(" (its send ended %s, given up, before seq %d was sent)", early.outcome, top.id.Seq)
					} else {
						a.Detail += fmt.Sprintf(" (sent on connection %d, dropped before seq %d was sent on connection %d)", early.conn, top.id.Seq, late.conn)
					}
					r.Unpromised = append(r.Unpromised, a)
					continue
				}
				add(a)
				continue
			}
			top, have = ra, true
		}
	}

	// Replica divergence: replicas reporting the same HW must hash alike.
	tps := make([]TP, 0, len(replicas))
	for tp := range replicas {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, compareTP)
	for _, tp := range tps {
		byHW := map[int64][]Event{}
		for _, e := range replicas[tp] {
			if e.SHA256 == "" {
				add(Anomaly{Kind: Diverged, TP: tp, Offset: e.HW,
					Detail: fmt.Sprintf("broker %d ends at %d, short of the end %d the readers reached", e.Broker, e.Held, e.HW)})
				continue
			}
			byHW[e.HW] = append(byHW[e.HW], e)
		}
		hws := make([]int64, 0, len(byHW))
		for hw := range byHW {
			hws = append(hws, hw)
		}
		slices.Sort(hws)
		for _, hw := range hws {
			rs := byHW[hw]
			for _, e := range rs[1:] {
				if e.SHA256 != rs[0].SHA256 {
					add(Anomaly{Kind: Diverged, TP: tp, Offset: hw,
						Detail: fmt.Sprintf("below hw %d broker %d has %.12s, broker %d has %.12s", hw, rs[0].Broker, rs[0].SHA256, e.Broker, e.SHA256)})
					break
				}
			}
		}
	}

	// Consumers: their polls, drains, and refused sends read.
	known := map[TP][]int64{}
	for _, ra := range reads {
		if complete[ra.tp][ra.reader] {
			known[ra.tp] = append(known[ra.tp], ra.offset)
		}
	}
	for tp, offs := range known {
		slices.Sort(offs)
		known[tp] = slices.Compact(offs)
	}
	checkConsumers(evs, known, func(id ID) (string, bool, TP) {
		s := sends[id]
		return s.outcome, s.refused, s.tp
	}, where, final, sendOrder, add)

	// Partitions sent to that no reader finished.
	seenTP := map[TP]bool{}
	for _, id := range sendOrder {
		tp := sends[id].tp
		if !seenTP[tp] && !ended[tp] {
			r.Incomplete = append(r.Incomplete, tp)
		}
		seenTP[tp] = true
	}
	slices.SortFunc(r.Incomplete, compareTP)
	for _, tp := range r.Incomplete {
		r.Invalid = append(r.Invalid, fmt.Sprintf("no reader read %s to its end", tp))
	}

	// What a power loss everywhere took is not promised: set those
	// anomalies apart.
	floors := powerLosses(cuts)
	strandedAt := stranded(evs, floors)
	kept := r.Anomalies[:0]
	for _, a := range r.Anomalies {
		s := sends[a.ID]
		var at *int64
		switch {
		case a.Kind == Lost && s.at != nil:
			at = s.at
		case a.Kind == Lost && len(where[a.ID]) > 0:
			at = &where[a.ID][0].offset
		case a.Kind == Inconsistent || a.Kind == Reordered || a.Kind == PollSkip || a.Kind == NonmonotonicPoll:
			at = &a.Offset
		}
		if unpromised(a, at, s.end, floors[a.TP]) || (a.Kind == Unseen && strandedAt[a.TP]) {
			a.Unpromised = true
			r.Counts[a.Kind]--
			r.Unpromised = append(r.Unpromised, a)
			continue
		}
		kept = append(kept, a)
	}
	r.Anomalies = kept
	for _, a := range invariantAnomalies(invs, cuts) {
		if a.Unpromised {
			r.Unpromised = append(r.Unpromised, a)
			continue
		}
		add(a)
	}

	kindIdx := func(k string) int { return slices.Index(Kinds, k) }
	slices.SortStableFunc(r.Anomalies, func(a, b Anomaly) int {
		return cmp.Or(cmp.Compare(kindIdx(a.Kind), kindIdx(b.Kind)), compareTP(a.TP, b.TP),
			cmp.Compare(a.Offset, b.Offset), compareID(a.ID, b.ID))
	})
	return r
}

func name(ra readAt) string {
	if ra.raw != "" {
		return "raw " + ra.raw
	}
	return ra.id.String()
}

// rank orders outcomes so a retried message keeps its strongest one.
func rank(outcome string) int {
	switch outcome {
	case OK:
		return 2
	case Unknown:
		return 1
	}
	return 0
}

func compareTP(a, b TP) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

func comparePos(a, b pos) int { return cmp.Or(compareTP(a.tp, b.tp), cmp.Compare(a.offset, b.offset)) }

func compareID(a, b ID) int {
	return cmp.Or(cmp.Compare(a.Producer, b.Producer), cmp.Compare(a.Seq, b.Seq))
}
