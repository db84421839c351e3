package clustertls

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

func keystore(t *testing.T, ca *CA, id wire.BrokerID) *Keystore {
	t.Helper()
	ks, err := ca.Issue(id, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	k, err := Parse(ks, ca.CertPEM())
	if err != nil {
		t.Fatal(err)
	}
	if k.ID() != id {
		t.Fatalf("ID %d, want %d", k.ID(), id)
	}
	return k
}

func TestBrokerID(t *testing.T) {
	for _, tc := range []struct {
		cn   string
		want wire.BrokerID
		ok   bool
	}{{"broker-0", 0, true}, {"broker-17", 17, true}, {"broker-2147483647", 2147483647, true},
		{"broker-", 0, false}, {"broker--1", 0, false}, {"broker-01", 0, false}, {"broker-2147483648", 0, false},
		{"Broker-1", 0, false}, {"client", 0, false}, {"broker-1 ", 0, false}} {
		id, err := BrokerID(&x509.Certificate{Subject: pkix.Name{CommonName: tc.cn}})
		if tc.ok != (err == nil) || tc.ok && id != tc.want {
			t.Errorf("BrokerID(CN=%q) = %d, %v", tc.cn, id, err)
		}
		if err != nil && !errors.Is(err, ErrNotBroker) {
			t.Errorf("BrokerID(CN=%q): %v does not wrap ErrNotBroker", tc.cn, err)
		}
	}
}

// handshake runs a TLS handshake between server and client over a pipe and
// returns the certificate the server verified, or the handshake's error.
func handshake(t *testing.T, server, client *tls.Config) (*x509.Certificate, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	sc, cc := tls.Server(a, server), tls.Client(b, client)
	done := make(chan error, 1)
	go func() { done <- sc.Handshake(); a.Close() }()
	cerr := cc.Handshake()
	b.Close()
	serr := <-done
	if cerr == nil && serr == nil {
		st := sc.ConnectionState()
		return st.VerifiedChains[0][0], nil
	}
	return nil, errors.Join(cerr, serr)
}

func TestMutualTLS(t *testing.T) {
	ca, err := NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	k0, k1 := keystore(t, ca, 0), keystore(t, ca, 1)
	peer, err := handshake(t, k0.ServerConfig(), k1.ClientConfig(0))
	if err != nil {
		t.Fatal(err)
	}
	if id, err := BrokerID(peer); err != nil || id != 1 {
		t.Fatalf("server saw broker %d (%v), want 1", id, err)
	}
	// Dialling broker 2 but reaching broker 0: refused by the client.
	if _, err := handshake(t, k0.ServerConfig(), k1.ClientConfig(2)); err == nil {
		t.Fatal("a client expecting broker 2 accepted broker 0's certificate")
	}
	// A certificate from another CA: refused by the server.
	other, err := NewCA("other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, k0.ServerConfig(), keystoreOf(t, other, ca, 1).ClientConfig(0)); err == nil {
		t.Fatal("the server accepted a certificate from another CA")
	}
	// No certificate: refused by the server.
	if _, err := handshake(t, k0.ServerConfig(), &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}); err == nil {
		t.Fatal("the server accepted a client without a certificate")
	}
}

// keystoreOf is a keystore with issuer's certificate for id that trusts
// trusted (so Parse, which checks the keystore against the truststore,
// is bypassed).
func keystoreOf(t *testing.T, issuer, trusted *CA, id wire.BrokerID) *Keystore {
	t.Helper()
	ks, err := issuer.Issue(id, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(ks, ks)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(trusted.cert)
	return &Keystore{id: id, cert: cert, roots: roots}
}

func TestParseRefusesForeignKeystore(t *testing.T) {
	ca, _ := NewCA("a", time.Hour)
	other, _ := NewCA("b", time.Hour)
	ks, err := other.Issue(0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(ks, ca.CertPEM()); err == nil {
		t.Fatal("Parse accepted a keystore the truststore does not verify")
	}
}
