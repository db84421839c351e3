package broker

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/props"
	"github.com/netdb11/kafka/broker/server"
	"github.com/netdb11/kafka/broker/wire"
)

// ownKeys are the broker's own keys, the ones that are neither the log's
// (log.Keys) nor the server's (server.Keys). The first three come first in
// --help.
var ownKeys = props.NewTable("broker",
	props.Int("brokerid", 0, math.MaxInt32, "", func(c *Config) *wire.BrokerID { return &c.BrokerID }).
		Doc("int", "unique id of this broker in the cluster"),
	props.String("hostname", func(c *Config) *string { return &c.Hostname }, nil).
		Doc("string", "address to listen on and to register in ZooKeeper (empty: every interface, and this host's IP address)"),
	props.Int("port", 0, math.MaxUint16, "0: any free port", func(c *Config) *int { return &c.Port }).
		Doc("int", "TCP port to listen on (0: any free port)"),

	props.Int("num.threads", 1, math.MaxInt32, "", func(c *Config) *int { return &c.NumThreads }).
		Doc("int", "Kafka 0.7's network thread count; accepted for compatibility, unused (one goroutine per connection)"),
	props.Bool("enable.zookeeper", func(c *Config) *bool { return &c.EnableZookeeper }).
		Doc("bool", "register the broker and its topics in ZooKeeper"),
	props.String("zk.connect", func(c *Config) *string { return &c.ZkConnect }, nil).
		Doc("string", "ZooKeeper connection string (host:port[,host:port...][/chroot])"),
	props.Millis("zk.connectiontimeout.ms", 1, math.MaxInt32, "", func(c *Config) *time.Duration { return &c.ZkConnectionTimeout }).
		Doc("ms", "time allowed to connect to ZooKeeper"),
	props.Millis("zk.sessiontimeout.ms", 1, math.MaxInt32, "", func(c *Config) *time.Duration { return &c.ZkSessionTimeout }).
		Doc("ms", "ZooKeeper session timeout"),
	props.Millis("zk.synctime.ms", 1, math.MaxInt32, "", func(c *Config) *time.Duration { return &c.ZkSyncTime }).
		Doc("ms", "how far a ZooKeeper follower may be behind its leader"),
	props.String("metrics.listen", func(c *Config) *string { return &c.MetricsListen }, func(c *Config) error {
		if c.MetricsListen == "" {
			return nil
		}
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			return props.Invalid("metrics.listen", strconv.Quote(c.MetricsListen), "must be HOST:PORT")
		}
		return nil
	}).Doc("string", "HOST:PORT of an HTTP listener serving Prometheus metrics at /metrics and segment details at /admin/partitions (empty: none)"),

	// The inter-broker listener, which the 2011 broker opens when a layer
	// is set (interbroker.go); the layer's own keys are replica.Keys.
	props.Int("replica.port", 0, math.MaxUint16, "0: any free port", func(c *Config) *int { return &c.ReplicaPort }).
		Doc("int", "replication: TCP port of the inter-broker listener, the only one serving replica fetches and the controller's orders (0: any free port; registered in ZooKeeper under /brokers/interbroker)"),
	props.String("replica.listener.host", func(c *Config) *string { return &c.ReplicaListenerHost }, nil).
		Doc("string", "replication: address the inter-broker listener binds to and other brokers dial (empty: the registered host)"),
	props.String("ssl.keystore.type", func(c *Config) *string { return &c.SSLKeystoreType }, func(c *Config) error {
		if c.SSLKeystoreType != "PEM" {
			return props.Invalid("ssl.keystore.type", strconv.Quote(c.SSLKeystoreType), "must be PEM (the only keystore type supported)")
		}
		return nil
	}).Doc("string", "replication: format of the keystore and truststore files: PEM only"),
	props.String("ssl.keystore.location", func(c *Config) *string { return &c.SSLKeystoreLocation }, nil).Doc("string", "replication: PEM file with this broker's private key and certificate chain (CN=broker-<brokerid>); with ssl.truststore.location, mutual TLS on the inter-broker listener (empty: plaintext)"),
	props.String("ssl.truststore.location", func(c *Config) *string { return &c.SSLTruststoreLocation }, nil).
		Doc("string", "replication: PEM file of the cluster CA certificates that brokers' certificates must be issued by"),
)

// Keys is the broker's key table: every server.properties key, bound to
// its field of Config with its bounds, in --help order: the broker's own
// keys, with the log's (Config.Log) and the server's (Config.Server) taken
// in from their packages.
var Keys = props.NewTable("broker", concat(
	ownKeys.Keys()[:3],
	props.Embed(log.Keys, func(c *Config) *log.Config { return &c.Log }),
	props.Embed(server.Keys, func(c *Config) *server.Config { return &c.Server }),
	ownKeys.Keys()[3:],
)...)

func concat[T any](parts ...[]T) []T {
	var out []T
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// KeyNames returns the name of every configuration key, in --help order.
func KeyNames() []string { return Keys.Names() }

// Set sets the field of the named key from its text form (surrounding
// blanks ignored). An unknown key or a bad value is an error naming both,
// wrapping ErrInvalidConfig; a bad value leaves c unchanged.
func (c *Config) Set(name, value string) error {
	if err := Keys.Set(c, name, value); err != nil {
		return fmt.Errorf("broker: %w: %w", ErrInvalidConfig, err)
	}
	return nil
}

// Get returns the text form of the named key's value.
func (c *Config) Get(name string) (string, error) {
	v, err := Keys.Get(c, name)
	if err != nil {
		return "", fmt.Errorf("broker: %w: %w", ErrInvalidConfig, err)
	}
	return v, nil
}
