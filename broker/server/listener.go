package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// Listener says what a listener given to ServeListener is for.
//
// A broker running the replication layer has two: the client port (port,
// the zero Listener), which serves 0.7's requests, METADATA and
// PRODUCE_ACKS and refuses the cluster's own requests
// (wire.RequestType.IsInterBroker) with CodeClusterAuthorizationFailed;
// and the inter-broker listener (replica.port), which serves those and
// OFFSETS (a follower below its leader's log start asks it where the log
// starts) and nothing else, over mutual TLS when the broker has a
// keystore.
//
// Deviation: Kafka serves every request on every listener and leaves it
// to authorization (the ClusterAction ACL) to refuse a client's cluster
// request; here the listener alone decides which requests it serves.
type Listener struct {
	// InterBroker marks the inter-broker listener.
	InterBroker bool
	// TLS, if set, is the TLS configuration every accepted connection is
	// wrapped in (the inter-broker listener's, requiring and verifying a
	// client certificate). Fetched bytes are then copied through user
	// space: sendfile cannot encrypt.
	TLS *tls.Config
}

// Peer is what the server knows of the other end of a connection, given to
// the Extension with each request (ResponseWriter.Peer).
type Peer struct {
	// InterBroker is true on the inter-broker listener.
	InterBroker bool
	// Certificate is the peer's certificate, verified during the TLS
	// handshake; nil on a listener without TLS.
	Certificate *x509.Certificate
}

// Peer returns what the server knows of the connection the request came on.
func (w *ResponseWriter) Peer() Peer { return w.peer }

// handshakeTimeout bounds a TLS handshake on an accepted connection (or
// connections.max.idle.ms, if shorter).
const handshakeTimeout = 10 * time.Second

// handshake completes the TLS handshake of a connection accepted on a TLS
// listener and records the peer's verified certificate.
func (c *conn) handshake() error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	d := handshakeTimeout
	if c.s.cfg.MaxIdle > 0 {
		d = min(d, c.s.cfg.MaxIdle)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	go func() { // shutdown ends a handshake in progress
		select {
		case <-c.s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	if st := tc.ConnectionState(); len(st.VerifiedChains) > 0 && len(st.VerifiedChains[0]) > 0 {
		c.peer.Certificate = st.VerifiedChains[0][0]
	}
	return nil
}

// listenerRefuses checks a request's type against the connection's
// listener. On the inter-broker listener anything but the cluster's own
// requests and OFFSETS closes the connection (an error); on the client port of a broker
// with an Extension those requests are answered with
// CodeClusterAuthorizationFailed (refused true) and the connection goes
// on. A 2011 broker (no Extension) is left as it was: it closes the
// connection of any type it does not know.
func (c *conn) listenerRefuses(t wire.RequestType) (refused bool, err error) {
	if c.peer.InterBroker {
		if !t.IsInterBroker() && t != wire.RequestOffsets {
			return true, &clientError{fmt.Errorf("request %v on the inter-broker listener, which serves only the cluster's own requests and OFFSETS", t)}
		}
		return false, nil
	}
	if !t.IsInterBroker() || c.s.cfg.Extension == nil {
		return false, nil
	}
	c.s.log.Warn("refusing a cluster request on the client port: brokers send it to the inter-broker listener (replica.port)",
		"remote", c.remote, "request", t, "code", wire.CodeClusterAuthorizationFailed)
	c.out.hdr = wire.AppendErrorResponse(c.out.hdr, wire.CodeClusterAuthorizationFailed)
	return true, c.out.flush()
}
