package controller

import (
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// interBrokerView returns the live brokers with each one's Host and Port
// replaced by its inter-broker listener's (/brokers/interbroker/<id>), the
// address the controller's senders dial and the LEADER_AND_ISR orders
// name as each leader's endpoint. The 0.7 registration (/brokers/ids/<id>)
// names the client port, which refuses the cluster's requests.
//
// A broker without an endpoint (one that does not run this version) keeps
// its client address, and a warning says it will refuse the orders.
func (c *Controller) interBrokerView(live map[wire.BrokerID]zkcoord.BrokerInfo) (map[wire.BrokerID]zkcoord.BrokerInfo, error) {
	out := make(map[wire.BrokerID]zkcoord.BrokerInfo, len(live))
	for id, info := range live {
		host, port, ok, err := c.registry.InterBrokerEndpoint(id)
		if err != nil {
			return nil, err
		}
		if ok {
			info.Host, info.Port = host, port
		} else {
			c.log.Warn("controller: broker has no inter-broker endpoint; its client port will refuse orders", "broker", id, "path", zkcoord.InterBrokerEndpointPath(id))
		}
		out[id] = info
	}
	return out, nil
}
