package replica

import "fmt"

// Truncation is the rule a follower applies when it starts following a new
// leader (replica.truncation).
type Truncation string

const (
	// TruncateEpoch is KIP-101's rule (with KIP-279's refinement): ask the
	// leader where the follower's latest epoch ends and cut there, never
	// below what the leader holds. The default.
	TruncateEpoch Truncation = "epoch"
	// TruncateHW is Kafka 0.8's rule: cut to the follower's own high
	// watermark. It can lose acknowledged messages (the KIP-101 scenario)
	// and is kept so that the fault suite can show it.
	TruncateHW Truncation = "hw"
)

// ParseTruncation parses replica.truncation.
func ParseTruncation(s string) (Truncation, error) {
	switch t := Truncation(s); t {
	case TruncateEpoch, TruncateHW:
		return t, nil
	}
	return "", fmt.Errorf("replica.truncation=%q: want epoch or hw", s)
}

// AskLeader asks the leader for the end of an epoch (an OffsetForLeaderEpoch
// request): the largest epoch at or below it the leader knows, and that
// epoch's end offset in the leader's log, or (UndefinedEpoch, -1).
type AskLeader func(epoch int32) (leaderEpoch int32, end Offset, err error)

// TruncationPoint decides where a follower whose log ends at leo (high
// watermark hw, leader epochs entries) cuts its log before fetching from a
// new leader. With TruncateHW it is min(hw, leo). With TruncateEpoch it asks
// the leader about its latest epoch; the leader answers with the largest
// epoch it knows at or below it and where that epoch ends. If the follower
// holds that epoch too, it cuts at the smaller of the two ends of it (where
// the logs may first differ). If it does not (KIP-279: the leader's epoch
// began inside one of the follower's, whose bytes there may differ), it
// drops its epochs above the answer, bounds the cut by the answer's end and
// asks again about its own latest epoch at or below the answer, until the
// two agree on an epoch. If the leader knows none of the follower's epochs,
// the follower asks about its next older one, and with none left falls back
// to its high watermark.
//
// Both logs hold the same bytes up to the point returned, which is a message
// boundary in both: the start of an epoch or a log end in each.
func TruncationPoint(mode Truncation, entries []EpochEntry, leo, hw Offset, ask AskLeader) (Offset, error) {
	if mode == TruncateHW || ask == nil {
		return min(hw, leo), nil
	}
	for len(entries) > 0 {
		latest := entries[len(entries)-1]
		le, end, err := ask(latest.Epoch)
		if err != nil {
			return 0, err
		}
		if le == UndefinedEpoch || end < 0 {
			entries = entries[:len(entries)-1]
			continue
		}
		// The follower's epochs up to le, and where the last of them ends
		// in its log.
		n := len(entries)
		for n > 0 && entries[n-1].Epoch > le {
			n--
		}
		own := leo
		if n < len(entries) {
			own = entries[n].Start
		}
		if n > 0 && entries[n-1].Epoch == le {
			return min(end, own, leo), nil
		}
		// KIP-279: le is an epoch this follower never held.
		leo = min(end, own, leo)
		entries = entries[:n]
	}
	return min(hw, leo), nil
}
