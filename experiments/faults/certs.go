package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/netdb11/kafka/broker/clustertls"
	"github.com/netdb11/kafka/broker/wire"
)

// tlsDir holds the cluster's TLS files: the CA's certificate (every
// broker's truststore) and one keystore per broker, as kafka-certs writes
// them. The CA's key is not kept: the harness issues every certificate
// when the cluster starts.
func (c *Cluster) tlsDir() string { return filepath.Join(c.cfg.Dir, "tls") }

func (c *Cluster) truststore() string { return filepath.Join(c.tlsDir(), "ca.pem") }

func (c *Cluster) keystore(id int) string {
	return filepath.Join(c.tlsDir(), fmt.Sprintf("broker-%d.pem", id))
}

// makeCerts makes the cluster's CA and a keystore per broker (CN=broker-<id>),
// so that the brokers' inter-broker listeners run mutual TLS
// (broker/clustertls) as README's cluster recipe does.
func (c *Cluster) makeCerts() error {
	const validity = 7 * 24 * time.Hour
	if err := os.MkdirAll(c.tlsDir(), 0o700); err != nil {
		return err
	}
	ca, err := clustertls.NewCA("kafka-faults cluster CA", validity)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.truststore(), ca.CertPEM(), 0o644); err != nil {
		return err
	}
	for id := 1; id <= c.cfg.Brokers; id++ {
		ks, err := ca.Issue(wire.BrokerID(id), validity)
		if err != nil {
			return err
		}
		if err := os.WriteFile(c.keystore(id), ks, 0o600); err != nil {
			return err
		}
	}
	return nil
}
