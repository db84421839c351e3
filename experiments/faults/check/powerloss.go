package check

import "time"

// floor is one power loss everywhere, for one partition: when it struck
// and the least that any replica had flushed.
type floor struct {
	at     time.Time
	offset int64
}

// powerLosses groups cut events that struck every replica at once
// (Everywhere) by partition and strike.
func powerLosses(cuts []Event) map[TP][]floor {
	type strike struct {
		tp TP
		at time.Time
	}
	least := map[strike]int64{}
	for _, c := range cuts {
		if !c.Everywhere {
			continue
		}
		k := strike{TP{c.Topic, c.Partition}, c.Start}
		if o, ok := least[k]; !ok || c.Offset < o {
			least[k] = c.Offset
		}
	}
	out := map[TP][]floor{}
	for k, o := range least {
		out[k.tp] = append(out[k.tp], floor{k.at, o})
	}
	return out
}

// unpromised reports whether anomaly a lies above what every replica had
// flushed at a power loss everywhere: a lost write acknowledged before the
// strike at an offset at or above its floor (or at an offset nobody knows),
// an offset at or above the floor read as two messages, or a producer's
// message read there (before the strike, then lost) above a later one of
// its written after it.
func unpromised(a Anomaly, at *int64, acked time.Time, fs []floor) bool {
	for _, f := range fs {
		switch a.Kind {
		case Lost:
			if !acked.After(f.at) && (at == nil || *at >= f.offset) {
				return true
			}
		case Inconsistent, Reordered:
			if *at >= f.offset {
				return true
			}
		}
	}
	return false
}
