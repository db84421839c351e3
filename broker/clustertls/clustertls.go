// Package clustertls authenticates brokers to each other on the
// inter-broker listener (replica.port) with mutual TLS: each broker holds a
// certificate issued by the cluster's own CA whose subject common name is
// "broker-<id>", and the id in the peer's certificate is the only broker id
// a connection may act as.
//
// Files are PEM, as Kafka's ssl.keystore.type=PEM (KIP-651) keystore and
// truststore files: the keystore holds the broker's private key
// (unencrypted) and its certificate chain, leaf first; the truststore
// holds the CA certificates a peer's chain must lead to. Issue and NewCA
// make them (the kafka-certs command).
//
// Both ends verify: the listener requires a client certificate from the
// truststore's CAs (tls.RequireAndVerifyClientCert), and a broker dialling
// broker N accepts only a certificate of broker N from those CAs, so a
// follower knows it copies from the leader the controller named.
//
// Deviation: Kafka verifies the server's host name (ssl.endpoint.
// identification.algorithm=https) and maps the client's certificate to a
// principal that ACLs authorize; here the certificate's broker id is both
// the name checked and the principal, and host names are not checked, so
// one CA certificate and one certificate per broker id serve any address.
package clustertls

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/netdb11/kafka/broker/wire"
)

// CommonNamePrefix starts the subject common name of a broker's
// certificate: "broker-<id>".
const CommonNamePrefix = "broker-"

// ErrNotBroker means a certificate does not name a broker.
var ErrNotBroker = errors.New("clustertls: certificate does not name a broker (want CN=broker-<id>)")

// BrokerID returns the broker id a certificate names in its subject common
// name ("broker-<id>", id a non-negative 32-bit integer). The caller has
// verified the certificate's chain.
func BrokerID(cert *x509.Certificate) (wire.BrokerID, error) {
	if cert == nil {
		return -1, ErrNotBroker
	}
	cn := cert.Subject.CommonName
	digits, ok := strings.CutPrefix(cn, CommonNamePrefix)
	if !ok {
		return -1, fmt.Errorf("%w: CN=%q", ErrNotBroker, cn)
	}
	n, err := strconv.ParseInt(digits, 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != digits {
		return -1, fmt.Errorf("%w: CN=%q", ErrNotBroker, cn)
	}
	return wire.BrokerID(n), nil
}

// Keystore is a broker's TLS identity and the cluster's CAs, loaded from
// PEM files.
type Keystore struct {
	id    wire.BrokerID
	cert  tls.Certificate
	roots *x509.CertPool
}

// Load reads the keystore file (private key and certificate chain, PEM;
// ssl.keystore.location) and the truststore file (CA certificates, PEM;
// ssl.truststore.location). The keystore's certificate must name a broker
// and be verified by the truststore.
func Load(keystore, truststore string) (*Keystore, error) {
	ks, err := os.ReadFile(keystore)
	if err != nil {
		return nil, fmt.Errorf("clustertls: ssl.keystore.location: %w", err)
	}
	ts, err := os.ReadFile(truststore)
	if err != nil {
		return nil, fmt.Errorf("clustertls: ssl.truststore.location: %w", err)
	}
	k, err := Parse(ks, ts)
	if err != nil {
		return nil, fmt.Errorf("%w (keystore %s, truststore %s)", err, keystore, truststore)
	}
	return k, nil
}

// Parse is Load from the files' contents.
func Parse(keystorePEM, truststorePEM []byte) (*Keystore, error) {
	cert, err := tls.X509KeyPair(keystorePEM, keystorePEM)
	if err != nil {
		return nil, fmt.Errorf("clustertls: keystore: %w", err)
	}
	roots := x509.NewCertPool()
	n := 0
	for rest := truststorePEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("clustertls: truststore: %w", err)
		}
		roots.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, errors.New("clustertls: truststore holds no certificate")
	}
	k := &Keystore{cert: cert, roots: roots}
	if _, err := k.verify(cert.Certificate, x509.ExtKeyUsageClientAuth); err != nil {
		return nil, fmt.Errorf("clustertls: the keystore's certificate: %w", err)
	}
	if k.id, err = BrokerID(cert.Leaf); err != nil {
		return nil, err
	}
	return k, nil
}

// ID is the broker id of the keystore's certificate.
func (k *Keystore) ID() wire.BrokerID { return k.id }

// verify checks a raw chain (leaf first) against the truststore for usage
// and returns the leaf.
func (k *Keystore) verify(raw [][]byte, usage x509.ExtKeyUsage) (*x509.Certificate, error) {
	if len(raw) == 0 {
		return nil, errors.New("no certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return nil, err
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: k.roots, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return nil, err
	}
	return certs[0], nil
}

// ServerConfig is the inter-broker listener's TLS configuration: TLS 1.3,
// this broker's certificate, and a client certificate required and verified
// against the truststore (tls.RequireAndVerifyClientCert). The peer's
// broker id is BrokerID of the verified leaf.
func (k *Keystore) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{k.cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    k.roots,
	}
}

// ClientConfig is the TLS configuration to dial broker expect's
// inter-broker listener: this broker's certificate, and the server's
// certificate verified against the truststore and required to name broker
// expect (not the host name: see the package's Deviation).
func (k *Keystore) ClientConfig(expect wire.BrokerID) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{k.cert},
		// The chain is verified below, by broker id instead of host name.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			raw := make([][]byte, len(cs.PeerCertificates))
			for i, c := range cs.PeerCertificates {
				raw[i] = c.Raw
			}
			leaf, err := k.verify(raw, x509.ExtKeyUsageServerAuth)
			if err != nil {
				return fmt.Errorf("clustertls: broker %d's certificate: %w", expect, err)
			}
			id, err := BrokerID(leaf)
			if err != nil {
				return err
			}
			if id != expect {
				return fmt.Errorf("clustertls: dialled broker %d, but the certificate is broker %d's", expect, id)
			}
			return nil
		},
	}
}
