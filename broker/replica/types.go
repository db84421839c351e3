package replica

import (
	"slices"

	"github.com/netdb11/kafka/broker/wire"
)

// BrokerID is a broker's id.
type BrokerID = wire.BrokerID

// Offset is a byte offset in a partition (paper §3.1).
type Offset = wire.Offset

// NoBroker is the id of no broker (no leader).
const NoBroker = wire.NoBroker

func sortedIDs[V any](m map[BrokerID]V) []BrokerID {
	out := make([]BrokerID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func sortStrings(xs []string) { slices.Sort(xs) }
