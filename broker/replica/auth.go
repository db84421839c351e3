package replica

import (
	"encoding/binary"

	"github.com/netdb11/kafka/broker/clustertls"
	"github.com/netdb11/kafka/broker/server"
	"github.com/netdb11/kafka/broker/wire"
)

// authorize checks a cluster request (wire.RequestType.IsInterBroker)
// against the certificate of the connection it came on, before Serve
// handles it: the certificate names a broker (CN=broker-<id>), a
// REPLICA_FETCH claims that broker's replica id, and a LEADER_AND_ISR or
// STOP_REPLICA that broker's id as its controller id (whether that broker
// is the controller is checked against ZooKeeper with the order). A
// request that fails is answered with CodeClusterAuthorizationFailed
// (refused true); the connection goes on.
//
// Only the inter-broker listener serves these requests (the client port
// refuses them, broker/server). Without TLS there is no certificate and
// nothing is checked here: anyone who reaches the listener can claim any
// broker id.
//
// The request is decoded here and again by Serve: a replica fetch is
// small, and the check stays out of Serve's cases.
func (m *Manager) authorize(frame []byte, w *server.ResponseWriter) (refused bool, err error) {
	t := wire.RequestType(binary.BigEndian.Uint16(frame))
	if !t.IsInterBroker() {
		return false, nil
	}
	cert := w.Peer().Certificate
	if cert == nil && m.cfg.TLS == nil {
		return false, nil
	}
	peer, idErr := clustertls.BrokerID(cert)
	claim := peer
	switch t {
	case wire.RequestReplicaFetch:
		r, err := wire.DecodeReplicaFetchRequest(frame)
		if err != nil {
			return false, nil // Serve refuses it
		}
		claim = BrokerID(r.ReplicaID)
	case wire.RequestLeaderAndISR:
		r, err := wire.DecodeLeaderAndISRRequest(frame)
		if err != nil {
			return false, nil
		}
		claim = BrokerID(r.ControllerID)
	case wire.RequestStopReplica:
		r, err := wire.DecodeStopReplicaRequest(frame)
		if err != nil {
			return false, nil
		}
		claim = BrokerID(r.ControllerID)
	}
	if idErr == nil && claim == peer {
		return false, nil
	}
	m.log.Warn("refusing a cluster request: the peer's certificate is not the broker it claims to be",
		"request", t, "claimed", claim, "certificate", peer, "err", idErr)
	const code = wire.CodeClusterAuthorizationFailed
	switch t {
	case wire.RequestReplicaFetch:
		w.Write(wire.AppendReplicaFetchResponseHeader(nil, code, -1, -1, nil, 0))
	case wire.RequestOffsetForLeaderEpoch:
		w.Write(wire.AppendOffsetForLeaderEpochResponse(nil, code, -1, -1))
	default:
		w.Write(wire.AppendPartitionErrorsResponse(nil, code, nil))
	}
	return true, w.Flush()
}
