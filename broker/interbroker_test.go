package broker_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest"
)

// TestNoReplicationNoSecondPort: a broker without the replication layer
// (the 2011 broker) opens no inter-broker listener.
func TestNoReplicationNoSecondPort(t *testing.T) {
	b := brokertest.Start(t, brokertest.Config())
	if a := b.InterBrokerAddr(); a != nil {
		t.Fatalf("a broker without replication listens on %v too", a)
	}
}

// TestInterBrokerTLSKeys: the keystore and truststore go together, and the
// only keystore type is PEM (refused by Set, or by Validate).
func TestInterBrokerTLSKeys(t *testing.T) {
	for _, tc := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"ssl.keystore.location": "/k.pem"}, "ssl.keystore.location"},
		{map[string]string{"ssl.truststore.location": "/ca.pem"}, "ssl.keystore.location"},
		{map[string]string{"ssl.keystore.type": "JKS"}, "ssl.keystore.type"},
	} {
		cfg := broker.DefaultConfig()
		var err error
		for k, v := range tc.kv {
			err = errors.Join(err, cfg.Set(k, v))
		}
		err = errors.Join(err, cfg.Validate())
		if !errors.Is(err, broker.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc.kv, err, tc.want)
		}
	}
}
