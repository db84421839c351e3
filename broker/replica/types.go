package replica

import (
	"github.com/netdb11/kafka/broker/wire"
)

// BrokerID is a broker's id.
type BrokerID = wire.BrokerID

// Offset is a byte offset in a partition (paper §3.1).
type Offset = wire.Offset

// NoBroker is the id of no broker (no leader).
const NoBroker BrokerID = -1
