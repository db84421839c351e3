package broker

import (
	"context"
	"fmt"
	"net"
	"strconv"
)

// listenInterBroker opens the inter-broker listener (replica.port on
// replica.listener.host, default the registered host) of a broker running
// a layer, with mutual TLS when ssl.keystore.location is set. A broker
// without a layer (replication off) opens no second port.
//
// Without TLS anyone who can reach this address can send the cluster's
// own requests (replica fetches, controller orders): binding it to a
// private network is then the only protection (README, "Who may change
// the cluster").
func (b *Broker) listenInterBroker() error {
	k, err := b.cfg.InterBrokerKeystore()
	if err != nil {
		return fmt.Errorf("broker: inter-broker TLS: %w", err)
	}
	if k != nil {
		b.interTLS = k.ServerConfig()
	}
	host := b.cfg.ReplicaListenerHost
	if host == "" {
		host = b.registeredHost()
	}
	addr := net.JoinHostPort(host, strconv.Itoa(b.cfg.ReplicaPort))
	lcfg := net.ListenConfig{Control: receiveBufferControl(b.cfg.Server.ReceiveBuffer)}
	if b.interLn, err = lcfg.Listen(context.Background(), "tcp", addr); err != nil {
		return fmt.Errorf("broker: replica.port: listen on %s: %w", addr, err)
	}
	return nil
}

// closeInterBroker closes the inter-broker listener of a broker that will
// not serve it.
func (b *Broker) closeInterBroker() error {
	if b.interLn == nil {
		return nil
	}
	return b.interLn.Close()
}

// InterBrokerAddr returns the address of the inter-broker listener, or nil
// for a broker without a layer (which has none).
func (b *Broker) InterBrokerAddr() net.Addr {
	if b.interLn == nil {
		return nil
	}
	return b.interLn.Addr()
}

// interBrokerEndpoint is the inter-broker listener's address as other
// brokers dial it: with host, the registered host, when it listens on
// every interface.
func (b *Broker) interBrokerEndpoint(host string) string {
	a := b.interLn.Addr().(*net.TCPAddr)
	if a.IP.IsUnspecified() {
		return net.JoinHostPort(host, strconv.Itoa(a.Port))
	}
	return a.String()
}

// InterBrokerRegistrar is a Registrar that also publishes the broker's
// inter-broker endpoint, where the controller and the followers find it.
// zkcoord.Registrar is one: /brokers/interbroker/<id>, written before
// /brokers/ids/<id>, whose 0.7 value ("creatorId:host:port", parsed by 0.7
// clients) stays as it was.
type InterBrokerRegistrar interface {
	// SetInterBrokerEndpoint sets the host:port Register publishes with
	// the broker; it is called before Register.
	SetInterBrokerEndpoint(addr string)
}

// PublishingLayer is a Layer with something to publish with the broker's
// registration: the broker hands it the Registrar before Register, and the
// layer gives the Registrar what it should write (the replication layer
// gives zkcoord.Registrar its log ends, written before /brokers/ids/<id>
// in every session).
type PublishingLayer interface {
	PublishWith(r Registrar)
}
