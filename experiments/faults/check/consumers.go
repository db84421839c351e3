package check

import (
	"fmt"
	"slices"
	"strings"
)

// Consumer anomaly kinds (Jepsen's names), as Result.Counts names them.
const (
	// PollSkip (Jepsen's poll-skip): a consumer's next poll of a partition
	// jumped over a message known to exist there (read by a reader that
	// read the partition to its end), outside a rebalance of that consumer.
	PollSkip = "poll-skip"
	// NonmonotonicPoll (Jepsen's nonmonotonic-poll): a consumer's next poll
	// of a partition came from an offset at or below its previous one,
	// outside a rebalance of that consumer.
	NonmonotonicPoll = "nonmonotonic-poll"
	// Unseen (Jepsen's unseen): acknowledged, in the final log, and polled
	// by no member of the group that was drained to the end (TypeDrain's
	// Target lists them; without a list, by no consumer). Checked only in
	// histories with a drain.
	Unseen = "unseen"
	// RefusedAppended: a send the leader refused with NotEnoughReplicas,
	// which promises nothing was appended (Event.Refused), whose message is
	// read later.
	RefusedAppended = "refused-but-appended"
)

// checkConsumers finds the consumer anomalies: polls (reads with Poll) in
// history order, cut by each consumer's rebalances; known holds the
// offsets readers found reading each partition to its end; final the
// messages they read; polled, filled here, the messages some consumer
// polled.
func checkConsumers(evs []Event, known map[TP][]int64, sends func(ID) (outcome string, refused bool, tp TP),
	where map[ID][]pos, final map[ID]bool, order []ID, add func(Anomaly)) {
	type key struct {
		reader string
		tp     TP
	}
	last := map[key]int64{}
	var polls []Event
	drained, members := false, map[string]bool{}
	for _, e := range evs {
		switch e.Type {
		case TypeRebalance:
			for k := range last {
				if k.reader == e.Reader {
					delete(last, k)
				}
			}
		case TypeDrain:
			drained = true
			for _, m := range strings.Split(e.Target, ",") {
				if m != "" {
					members[m] = true
				}
			}
		case TypeRead:
			if e.Poll == 0 {
				continue
			}
			tp := TP{e.Topic, e.Partition}
			if e.Raw == "" {
				polls = append(polls, e)
			}
			k := key{e.Reader, tp}
			prev, ok := last[k]
			last[k] = e.Offset
			if !ok {
				continue
			}
			if e.Offset <= prev {
				add(Anomaly{Kind: NonmonotonicPoll, TP: tp, Offset: prev,
					Detail: fmt.Sprintf("%s polled offset %d (poll %d) after offset %d", e.Reader, e.Offset, e.Poll, prev)})
				continue
			}
			offs := known[tp]
			i, _ := slices.BinarySearch(offs, prev+1)
			if i < len(offs) && offs[i] < e.Offset {
				n, _ := slices.BinarySearch(offs, e.Offset)
				add(Anomaly{Kind: PollSkip, TP: tp, Offset: offs[i],
					Detail: fmt.Sprintf("%s polled offset %d (poll %d) after offset %d, skipping %d messages from offset %d", e.Reader, e.Offset, e.Poll, prev, n-i, offs[i])})
			}
		}
	}
	polled := map[ID]bool{}
	for _, e := range polls {
		if len(members) == 0 || members[e.Reader] {
			polled[ID{e.Producer, e.Seq}] = true
		}
	}
	for _, id := range order {
		outcome, refused, tp := sends(id)
		if refused && len(where[id]) > 0 {
			add(Anomaly{Kind: RefusedAppended, TP: tp, ID: id, Offset: where[id][0].offset,
				Detail: fmt.Sprintf("refused (NotEnoughReplicas), read at offset %d", where[id][0].offset)})
		}
		if drained && outcome == OK && final[id] && !polled[id] {
			add(Anomaly{Kind: Unseen, TP: tp, ID: id, Offset: where[id][0].offset,
				Detail: fmt.Sprintf("acknowledged, at offset %d of the final log, polled by no consumer of the drained group", where[id][0].offset)})
		}
	}
}
