package check

import "time"

// floor is one power loss everywhere, for one partition: until when an
// acknowledgement is not promised (the last of its brokers dead) and the
// least that any replica had flushed.
type floor struct {
	at     time.Time
	offset int64
}

// powerLosses groups cut events that struck every replica at once
// (Everywhere) by partition and strike. A power loss is applied broker by
// broker; until the last of them is dead (the cut's End, before any
// restart) the others go on acknowledging what none of them will flush,
// so its floor's time is the latest End of the strike's cuts (its Start
// for a history written before cuts had an End).
func powerLosses(cuts []Event) map[TP][]floor {
	type strike struct {
		tp TP
		at time.Time
	}
	least := map[strike]floor{}
	for _, c := range cuts {
		if !c.Everywhere {
			continue
		}
		k := strike{TP{c.Topic, c.Partition}, c.Start}
		dead := c.Start
		if c.End.After(dead) {
			dead = c.End
		}
		f, ok := least[k]
		if !ok || c.Offset < f.offset {
			f.offset = c.Offset
		}
		if dead.After(f.at) {
			f.at = dead
		}
		least[k] = f
	}
	out := map[TP][]floor{}
	for k, f := range least {
		out[k.tp] = append(out[k.tp], f)
	}
	return out
}

// unpromised reports whether anomaly a lies above what every replica had
// flushed at a power loss everywhere: a lost write acknowledged before the
// last of the strike's brokers was dead, at an offset at or above its floor (or at an offset nobody knows),
// an offset at or above the floor read as two messages, or a producer's
// message read there (before the strike, then lost) above a later one of
// its written after it, or a consumer that polled there, then went back or
// skipped there.
func unpromised(a Anomaly, at *int64, acked time.Time, fs []floor) bool {
	for _, f := range fs {
		switch a.Kind {
		case Lost:
			if !acked.After(f.at) && (at == nil || *at >= f.offset) {
				return true
			}
		case Inconsistent, Reordered, PollSkip, NonmonotonicPoll:
			if *at >= f.offset {
				return true
			}
		}
	}
	return false
}

// stranded reports the partitions where a consumer stood above the floor of
// a power loss everywhere when it struck (a poll or a commit there before
// the last broker died): the log under its position was rewritten, and
// with byte offsets that position may fall inside a message of the new log,
// where the consumer cannot go on. What it then leaves unread (Unseen) is
// a consequence of the loss, not promised either.
func stranded(evs []Event, floors map[TP][]floor) map[TP]bool {
	out := map[TP]bool{}
	for _, e := range evs {
		if !(e.Type == TypeRead && e.Poll > 0) && e.Type != TypeCommit {
			continue
		}
		tp := TP{e.Topic, e.Partition}
		for _, f := range floors[tp] {
			if !e.Wall.IsZero() && !e.Wall.After(f.at) && e.Offset > f.offset {
				out[tp] = true
			}
		}
	}
	return out
}
