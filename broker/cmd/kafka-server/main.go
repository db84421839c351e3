// Command kafka-server runs a Kafka 0.7 broker:
//
//	kafka-server [server.properties] [--key=value ...]
//
// It reads Kafka 0.7's server.properties keys from the optional file, lets
// flags of the same names override them, and serves until SIGINT, SIGTERM or
// SIGHUP, then shuts down gracefully (in-flight requests finish, the logs
// are flushed and marked cleanly shut down).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/cli"
	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/broker/controller"
	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/props"
	"github.com/netdb11/kafka/broker/replica"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/spf13/pflag"
)

var command = cli.Command{
	Name: "kafka-server",
	Usage: "Usage: kafka-server [server.properties] [--key=value ...]\n\n" +
		"Runs a Kafka 0.7 broker. Every key of Kafka 0.7's server.properties can be set\n" +
		"in the file or as a flag of the same name; flags win.\n",
	MaxArgs:  1,
	ArgsRule: "at most one properties file",
	Setup: func(fs *pflag.FlagSet) cli.RunFunc {
		load := addFlags(fs)
		cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the broker's run to this file, until it stops (go tool pprof); not a server.properties key")
		return func(ctx context.Context, fs *pflag.FlagSet, std cli.IO) (err error) {
			stop, err := perf.StartCPUProfile(*cpuprofile)
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, stop()) }()
			return serve(ctx, fs.Arg(0), load, std.Stderr)
		}
	},
}

func main() { os.Exit(cli.Main(command)) }

// run is the command with the given arguments, logging to stderr, for tests.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	return command.Execute(ctx, args, cli.IO{Stderr: stderr})
}

// loader loads the broker's and its replication layer's configuration:
// the defaults, then the properties file at path (none when empty), then
// the flags set.
type loader func(path string, logger *slog.Logger) (broker.Config, replica.Config, error)

// addFlags defines on fs one flag per key of the 2011 broker (broker.Keys)
// and of the replication layer (replica.Keys), bound beside them, and
// returns the loader of both from one file and those flags: the layer's
// keys are read like the broker's but land in replica.Config, not in
// broker.Config (issue 25).
func addFlags(fs *pflag.FlagSet) loader {
	var rc replica.Config
	layerKeys := props.Bind(replica.Keys, &rc)
	rc = replica.DefaultConfig()
	broker.AddFlags(fs, layerKeys)
	return func(path string, logger *slog.Logger) (broker.Config, replica.Config, error) {
		rc = replica.DefaultConfig()
		cfg, err := broker.LoadConfig(path, fs, logger, layerKeys)
		return cfg, rc, err
	}
}

// serve loads the configuration with load (the file at path, then the
// flags), opens the broker's ZooKeeper session when zk.connect is set, and
// runs the broker until ctx ends.
//
// The broker has one ZooKeeper session, as in Kafka 0.8's KafkaServer:
// its registration (the 2011 broker's Registrar), its replication layer
// and its controller candidate all run on it, so a broker is alive or dead
// in ZooKeeper in every role at once (issue 21, rule 7). When the session
// expires, the registration, the leaderships and the controllership go
// together; in the new session the broker registers again, the candidate
// campaigns again and the layer resumes.
func serve(ctx context.Context, path string, load loader, stderr io.Writer) (err error) {
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	cfg, rc, err := load(path, logger)
	if err != nil {
		return err
	}
	if cfg.UsesZookeeper() {
		// Like 0.7's KafkaZooKeeper.startup, the broker does not start
		// without a session within zk.connectiontimeout.ms.
		sess, err := zkcoord.Dial(ctx, zkcoord.Config{
			Connect:           cfg.ZkConnect,
			SessionTimeout:    cfg.ZkSessionTimeout,
			ConnectionTimeout: cfg.ZkConnectionTimeout,
			Logger:            logger,
		})
		if err != nil {
			return fmt.Errorf("kafka-server: %w", err)
		}
		defer func() { err = errors.Join(err, sess.Close()) }()
		reg := zkcoord.NewSessionRegistrar(sess)
		defer func() { err = errors.Join(err, reg.Close()) }()
		cfg.Registrar = reg
		cfg.Layer = replicationLayer(cfg, rc, sess, logger)
	}
	b, err := broker.New(cfg)
	if err != nil {
		return err
	}
	return b.Run(ctx)
}

// replicationLayer builds the replication layer (broker/replica) and the
// controller candidate it runs (broker/controller) from rc (the layer's
// keys, as loaded) and what the layer takes from the broker's
// configuration (brokerid, max.message.size, the inter-broker keystore),
// on the broker's session: every broker of a ZooKeeper cluster runs it, so topics created with kafka-topics are
// replicated; topics created by a 0.7 PRODUCE stay as the 2011 broker
// keeps them.
func replicationLayer(cfg broker.Config, rc replica.Config, sess *zkcoord.Conn, logger *slog.Logger) func(*log.Manager) (broker.Layer, error) {
	return func(logs *log.Manager) (broker.Layer, error) {
		rc.BrokerID = replica.BrokerID(cfg.BrokerID)
		rc.Logs = logs
		rc.Session = sess
		rc.MaxMessageSize = cfg.Log.MaxMessageSize
		rc.Logger = logger.With("layer", "replica")
		ks, err := cfg.InterBrokerKeystore()
		if err != nil {
			return nil, err
		}
		rc.TLS = ks
		rc.Candidate = controller.New(controller.Config{BrokerID: rc.BrokerID, UncleanElection: rc.UncleanElection, MinInsyncReplicas: rc.MinInsyncReplicas,
			Backoff: rc.Backoff, RequestTimeout: rc.RequestTimeout, TLS: ks, Logger: logger.With("layer", "controller")})
		return replica.New(rc)
	}
}
