package replica

import (
	"time"

	"github.com/netdb11/kafka/zkcoord"
)

// peerClient returns a client for broker id's inter-broker listener at
// addr: over mutual TLS when this broker has a keystore, the server's
// certificate required to be broker id's.
func (m *Manager) peerClient(id BrokerID, addr string, timeout time.Duration) *client {
	c := newClient(addr, timeout)
	if m.cfg.TLS != nil {
		c.tls = m.cfg.TLS.ClientConfig(id)
	}
	return c
}

// interBrokerView returns the live brokers with each one's Host and Port
// replaced by its inter-broker listener's (/brokers/interbroker/<id>), the
// address the controller's senders dial and the LEADER_AND_ISR orders
// name as each leader's endpoint. The 0.7 registration (/brokers/ids/<id>)
// names the client port, which refuses the cluster's requests.
//
// A broker without an endpoint (one that does not run this version) keeps
// its client address, and a warning says it will refuse the orders.
func (c *Controller) interBrokerView(live map[BrokerID]zkcoord.BrokerInfo) (map[BrokerID]zkcoord.BrokerInfo, error) {
	out := make(map[BrokerID]zkcoord.BrokerInfo, len(live))
	for id, info := range live {
		host, port, ok, err := c.zk.InterBrokerEndpoint(id)
		if err != nil {
			return nil, err
		}
		if ok {
			info.Host, info.Port = host, port
		} else {
			c.m.log.Warn("controller: broker has no inter-broker endpoint; its client port will refuse orders", "broker", id, "path", zkcoord.InterBrokerEndpointPath(id))
		}
		out[id] = info
	}
	return out, nil
}
