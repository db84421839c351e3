package clustertls

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// CA is a cluster's certificate authority: it issues one certificate per
// broker. Its key stays with the operator; brokers need only its
// certificate (their truststore).
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// NewCA makes a self-signed CA (ECDSA P-256) named name, valid for validity.
func NewCA(name string, validity time.Duration) (*CA, error) {
	key, tmpl, err := newTemplate(name, validity)
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	tmpl.BasicConstraintsValid, tmpl.IsCA, tmpl.MaxPathLenZero = true, true, true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("clustertls: making the CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key}, nil
}

// newTemplate makes a fresh ECDSA P-256 key and a certificate template
// for common name cn, valid from an hour ago (clock skew) for validity.
func newTemplate(cn string, validity time.Duration) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	return key, &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
	}, nil
}

// ParseCA reads a CA from its certificate and private key (PEM), as
// CertPEM and KeyPEM wrote them.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("clustertls: CA certificate or key is not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("clustertls: CA certificate: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("clustertls: CA key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("clustertls: CA key cannot sign")
	}
	return &CA{cert: cert, key: signer}, nil
}

// CertPEM is the CA's certificate: the brokers' truststore.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// KeyPEM is the CA's private key (PKCS #8); keep it off the brokers.
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// Issue makes broker id's keystore: a new ECDSA P-256 key and a
// certificate with CN=broker-<id>, usable to serve and to dial (server and
// client authentication), valid for validity, followed by the CA's
// certificate; all PEM, the key first (PKCS #8, unencrypted).
func (ca *CA) Issue(id wire.BrokerID, validity time.Duration) ([]byte, error) {
	return ca.issue(fmt.Sprintf("%s%d", CommonNamePrefix, id), validity)
}

// issue is Issue for any common name (tests make certificates that name no
// broker).
func (ca *CA) issue(cn string, validity time.Duration) ([]byte, error) {
	key, tmpl, err := newTemplate(cn, validity)
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("clustertls: issuing %s: %w", cn, err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	return append(out, ca.CertPEM()...), nil
}

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}
