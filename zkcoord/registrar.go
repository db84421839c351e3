package zkcoord

import (
	"context"
	"fmt"
	"sync"

	"github.com/netdb11/kafka/broker/wire"
)

// Registrar adapts BrokerRegistration to the broker's Registrar interface
// (broker.Config.Registrar): Register opens the session and registers the
// broker, RegisterTopic registers its topics. Close ends the registration;
// the program that created the Registrar calls it after the broker stops.
type Registrar struct {
	cfg  Config
	conn *Conn // the shared session (NewSessionRegistrar), or nil: Register dials

	interBroker string          // set by SetInterBrokerEndpoint; guarded by mu
	logEnds     func() []LogEnd // set by SetLogEnds; guarded by mu

	mu  sync.Mutex
	reg *BrokerRegistration // set by Register; guarded by mu
}

// NewRegistrar returns a Registrar that registers through ZooKeeper with cfg,
// on a session of its own.
func NewRegistrar(cfg Config) *Registrar { return &Registrar{cfg: cfg} }

// NewSessionRegistrar returns a Registrar that registers on conn, a session
// the caller owns and shares with the broker's other roles (its
// replication layer and controller candidate), as 0.8's KafkaServer does:
// the broker is then alive or dead in ZooKeeper in every role at once.
// Close deletes the registration and leaves conn open.
func NewSessionRegistrar(conn *Conn) *Registrar { return &Registrar{conn: conn} }

// Register registers the broker (see RegisterBroker), waiting at most the
// connection timeout for a session. It can be called once.
func (r *Registrar) Register(brokerID wire.BrokerID, host string, port int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reg != nil {
		return fmt.Errorf("zkcoord: broker %d is already registered", r.reg.info.ID)
	}
	if err := checkBroker(brokerID, host, port); err != nil {
		return err
	}
	conn, owned := r.conn, false
	if conn == nil {
		var err error
		if conn, err = Dial(context.Background(), r.cfg); err != nil {
			return err
		}
		owned = true
	}
	reg, err := registerOn(context.Background(), conn, owned, brokerID, host, port, r.interBroker, r.logEnds)
	if err != nil {
		return err
	}
	r.reg = reg
	return nil
}

// SetInterBrokerEndpoint sets the host:port of the broker's inter-broker
// listener, which Register writes to /brokers/interbroker/<id> before
// /brokers/ids/<id> (broker.InterBrokerRegistrar).
func (r *Registrar) SetInterBrokerEndpoint(addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.interBroker = addr
}

// SetLogEnds sets what Register writes to /brokers/logends/<id> before
// /brokers/ids/<id>, in every session: ends returns the broker's
// replicated logs as they are at that moment (replica.Manager.LogEnds).
// Call it before Register.
func (r *Registrar) SetLogEnds(ends func() []LogEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logEnds = ends
}

// RegisterTopic registers a topic the broker holds; Register must come first.
func (r *Registrar) RegisterTopic(topic string, partitions int) error {
	r.mu.Lock()
	reg := r.reg
	r.mu.Unlock()
	if reg == nil {
		return fmt.Errorf("zkcoord: RegisterTopic(%s) before Register", topic)
	}
	return reg.RegisterTopic(topic, partitions)
}

// RegisterAdmin registers the broker's admin endpoint (see
// BrokerRegistration.RegisterAdmin); Register must come first.
func (r *Registrar) RegisterAdmin(addr string) error {
	r.mu.Lock()
	reg := r.reg
	r.mu.Unlock()
	if reg == nil {
		return fmt.Errorf("zkcoord: RegisterAdmin(%s) before Register", addr)
	}
	return reg.RegisterAdmin(addr)
}

// Close removes the registration; it is a no-op before Register.
func (r *Registrar) Close() error {
	r.mu.Lock()
	reg := r.reg
	r.reg = nil
	r.mu.Unlock()
	if reg == nil {
		return nil
	}
	return reg.Close()
}
