// Command kafka-ui serves a live web view of a cluster: brokers, topics,
// each partition's segment files and offsets, and consumer groups with
// their lag (package consumer/ui). It only reads the cluster.
//
//	kafka-ui --zookeeper=127.0.0.1:2181 [--broker-list=...] [--admin=127.0.0.1:9100,...] [--listen=127.0.0.1:8080]
//
// It lives with the consumer tools because it is a client of the cluster,
// as kafka-consumer-offset-checker is: it reads the registry and asks the
// brokers for offsets, and the broker does not depend on client packages.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/netdb11/kafka/broker/cli"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer/ui"
	"github.com/spf13/pflag"
)

var command = cli.Command{
	Name: "kafka-ui",
	Usage: "Usage: kafka-ui --zookeeper=HOST:PORT [--broker-list=ID:HOST:PORT,...] [--admin=HOST:PORT,...] [--listen=127.0.0.1:8080]\n\n" +
		"Serves a live web view of the cluster: brokers, topics, each partition's segment files\n" +
		"and offsets (from the brokers' --metrics.listen endpoints, which they publish in ZooKeeper;\n" +
		"--admin adds others), and consumer groups with their lag. It never writes to the cluster.\n",
	Setup: func(fs *pflag.FlagSet) cli.RunFunc {
		def := ui.DefaultConfig()
		zk := fs.String("zookeeper", "", "ZooKeeper connect string, host:port[,host:port][/chroot] (zk.connect)")
		brokers := fs.String("broker-list", "", "brokers to show besides those registered in ZooKeeper, id:host:port,...")
		admin := fs.String("admin", "", "brokers' admin endpoints (their metrics.listen), host:port,..., besides those published in ZooKeeper")
		listen := fs.String("listen", "127.0.0.1:8080", "address to serve the pages on (loopback by default)")
		refresh := fs.Duration("refresh", def.Refresh, "how often pages reload and lag is sampled")
		history := fs.Duration("history", def.History, "how far back the lag charts reach")
		timeout := fs.Duration("timeout", def.Timeout, "give up on ZooKeeper or a broker after this long")
		return func(ctx context.Context, fs *pflag.FlagSet, std cli.IO) error {
			cfg := def
			cfg.ZkConnect, cfg.Refresh, cfg.History, cfg.Timeout = *zk, *refresh, *history, *timeout
			if *brokers != "" {
				list, err := wire.ParseBrokerList(*brokers)
				if err != nil {
					return cli.Usagef("--broker-list: %v", err)
				}
				cfg.Brokers = list
			}
			for _, a := range strings.Split(*admin, ",") {
				if a = strings.TrimSpace(a); a != "" {
					cfg.Admin = append(cfg.Admin, a)
				}
			}
			if err := cfg.Validate(); err != nil {
				return cli.Usagef("%v", err)
			}
			cfg.Logger = slog.New(slog.NewTextHandler(std.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			ln, err := net.Listen("tcp", *listen)
			if err != nil {
				return err
			}
			s, err := ui.New(ctx, cfg)
			if err != nil {
				ln.Close()
				return err
			}
			fmt.Fprintf(std.Stderr, "kafka-ui: serving http://%s/\n", ln.Addr())
			return s.Run(ctx, ln)
		}
	},
}

func main() { os.Exit(cli.Main(command)) }

// run is the command with the given arguments, for tests.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	return command.Execute(ctx, args, cli.IO{Stderr: stderr})
}
