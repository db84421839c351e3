package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"time"

	"github.com/netdb11/kafka/broker/clustertls"
	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/props"
	"github.com/netdb11/kafka/broker/server"
	"github.com/netdb11/kafka/broker/wire"
)

// ErrInvalidConfig is wrapped by every configuration error of the broker,
// the log and the server; the message names the key and the value that was
// refused. It is props.ErrInvalid.
var ErrInvalidConfig = props.ErrInvalid

// Registrar publishes the broker and its topics in a registry (ZooKeeper in
// Kafka 0.7: /brokers/ids/<id> and /brokers/topics/<topic>/<id>). Package
// zkcoord provides one; the broker only calls it.
//
// Paper §3.2: brokers register themselves and the topics they
// hold so that producers and consumers can find partitions.
type Registrar interface {
	// Register announces the broker as reachable at host:port.
	Register(brokerID wire.BrokerID, host string, port int) error
	// RegisterTopic announces that the broker holds partitions of topic.
	RegisterTopic(topic string, partitions int) error
}

// Config is the broker's configuration: Kafka 0.7's server.properties, one
// field per key (the key is named in each field's comment), plus the parts a
// program injects (Registrar, Logger, Log.Clock). Start from DefaultConfig; the
// keys can be set from a properties file and flags (see LoadConfig and Set).
//
// Durations are typed: a key in hours, minutes or milliseconds sets the
// corresponding time.Duration, and a program (a test) may set any positive
// duration directly.
type Config struct {
	// BrokerID identifies the broker in the cluster (brokerid).
	BrokerID wire.BrokerID
	// Hostname is the address the broker listens on and registers
	// (hostname). Empty: listen on every interface and register this
	// machine's IP address, as Kafka 0.7
	// (InetAddress.getLocalHost.getHostAddress).
	//
	// Deviation: Kafka 0.7 always listens on every interface and uses
	// hostname only for registration; listening on it lets several brokers
	// and tests share one machine on loopback.
	Hostname string
	// Port is the TCP port (port); 0 picks a free port (see Broker.Addr).
	Port int
	// Log configures the log manager: log.dir, num.partitions,
	// topic.partition.count.map, the log.* and topic.* keys and
	// max.message.size (see log.Keys). New sets Log.OnNewTopic, and
	// Log.Logger to Logger when it is nil.
	Log log.Config
	// Server configures the network server: max.socket.request.bytes,
	// socket.send.buffer, socket.receive.buffer, fetch.use.sendfile,
	// connections.max.idle.ms, queued.max.request.bytes (see server.Keys)
	// and the shutdown timeout. New sets Server.Logs and
	// Server.Extension, and Server.Logger to Logger when it is nil.
	Server server.Config
	// NumThreads is Kafka 0.7's number of network processor threads
	// (num.threads; default: the number of CPUs).
	//
	// Deviation: accepted and validated but not used. Each connection has
	// its own goroutine and Go's scheduler spreads them over GOMAXPROCS
	// threads; a fixed pool would only let slow clients block others.
	NumThreads int
	// EnableZookeeper turns registration on (enable.zookeeper) when
	// ZkConnect is set. The broker registers through Registrar; with no
	// Registrar it logs a warning and runs without one.
	EnableZookeeper bool
	// ZkConnect is the ZooKeeper connection string (zk.connect). Empty (the
	// default) runs the broker alone, without ZooKeeper.
	ZkConnect string
	// ZkConnectionTimeout bounds connecting to ZooKeeper
	// (zk.connectiontimeout.ms).
	ZkConnectionTimeout time.Duration
	// ZkSessionTimeout is the ZooKeeper session timeout (zk.sessiontimeout.ms).
	ZkSessionTimeout time.Duration
	// ZkSyncTime is how far a ZooKeeper follower may lag (zk.synctime.ms).
	ZkSyncTime time.Duration
	// MetricsListen is the HOST:PORT of the broker's HTTP listener
	// (metrics.listen, an extension key; empty, the default: none). It
	// serves Prometheus series at /metrics and the read-only admin
	// endpoint /admin/partitions (broker/metrics).
	MetricsListen string

	// The inter-broker listener's keys (not in 0.7). The broker opens
	// the listener only when Layer is set; the replication layer's own
	// keys (replica.lag.time.max.ms, min.insync.replicas, ...) are not
	// here but in replica.Keys, which kafka-server binds beside Keys.

	// ReplicaPort is replica.port: the inter-broker listener's TCP port
	// (0: any free port; the port is registered in ZooKeeper). It is
	// opened only when Layer is set (replication on): the cluster's own
	// requests are served there and refused on Port.
	ReplicaPort int
	// ReplicaListenerHost is replica.listener.host: the address the
	// inter-broker listener binds to and other brokers dial (empty: the
	// registered host, Hostname or this machine's address).
	ReplicaListenerHost string
	// SSLKeystoreType is ssl.keystore.type; only PEM is supported.
	SSLKeystoreType string
	// SSLKeystoreLocation is ssl.keystore.location: a PEM file holding
	// this broker's private key and certificate chain (CN=broker-<id>).
	// Set, with SSLTruststoreLocation, it makes the inter-broker listener
	// mutual TLS (broker/clustertls); empty: plaintext.
	SSLKeystoreLocation string
	// SSLTruststoreLocation is ssl.truststore.location: a PEM file of the
	// cluster CA certificates a peer's certificate must be issued by.
	SSLTruststoreLocation string
	// Layer, if set, builds the layer above the 2011 broker (the
	// replication layer) once the logs are open; the broker serves its
	// requests and runs it beside the schedulers.
	Layer func(logs *log.Manager) (Layer, error)

	// Registrar, if set and UsesZookeeper, registers the broker
	// and its topics.
	Registrar Registrar
	// Logger receives the broker's logs (nil: slog.Default()).
	Logger *slog.Logger
}

// DefaultConfig returns Kafka 0.7's defaults. Where 0.7 has none (brokerid,
// log.dir, zk.connect) it uses the values of 0.7's config/server.properties.
func DefaultConfig() Config {
	lc := log.DefaultConfig()
	lc.Dir = "/tmp/kafka-logs"
	return Config{
		BrokerID:            0,
		Port:                6667,
		Log:                 lc,
		Server:              server.DefaultConfig(),
		NumThreads:          runtime.NumCPU(),
		EnableZookeeper:     true,
		ZkConnectionTimeout: 6000 * time.Millisecond,
		ZkSessionTimeout:    6000 * time.Millisecond,
		ZkSyncTime:          2000 * time.Millisecond,

		SSLKeystoreType: "PEM",
	}
}

// Validate checks every field against its key's bounds (see Keys) and
// returns one error per bad key (joined), each naming the key and wrapping
// ErrInvalidConfig. The log's and the server's fields are checked by their
// own Validate. New checks the same, each layer once: the broker's own keys
// there, the log's in log.Open, the server's in server.New.
func (c *Config) Validate() error {
	return errors.Join(c.validateOwn(), c.Log.Validate(), c.Server.Validate())
}

// validateOwn checks the broker's own keys (the keys of Keys that are not
// the log's or the server's).
func (c *Config) validateOwn() error {
	errs := []error{props.Each("broker", ownKeys.Validate(c))}
	if (c.SSLKeystoreLocation == "") != (c.SSLTruststoreLocation == "") {
		errs = append(errs, props.Wrap("broker", props.Invalid("ssl.keystore.location", strconv.Quote(c.SSLKeystoreLocation),
			"must be set together with ssl.truststore.location (both or neither)")))
	}
	return errors.Join(errs...)
}

// InterBrokerKeystore loads the inter-broker TLS keystore and truststore
// (ssl.keystore.location, ssl.truststore.location); nil, nil when they are
// not set (a plaintext inter-broker listener). The replication layer uses
// it to dial other brokers, the broker to serve its inter-broker listener.
// The keystore's certificate must name this broker (CN=broker-<brokerid>).
func (c *Config) InterBrokerKeystore() (*clustertls.Keystore, error) {
	if c.SSLKeystoreLocation == "" {
		return nil, nil
	}
	k, err := clustertls.Load(c.SSLKeystoreLocation, c.SSLTruststoreLocation)
	if err != nil {
		return nil, err
	}
	if k.ID() != c.BrokerID {
		return nil, fmt.Errorf("broker: %w: ssl.keystore.location %s holds broker %d's certificate, but brokerid is %d",
			ErrInvalidConfig, c.SSLKeystoreLocation, k.ID(), c.BrokerID)
	}
	return k, nil
}

// UsesZookeeper reports whether the broker registers in ZooKeeper: zk.connect
// is set and enable.zookeeper is true (Paper §3.2).
func (c *Config) UsesZookeeper() bool { return c.EnableZookeeper && c.ZkConnect != "" }
