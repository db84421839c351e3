// Command kafka-preferred-replica-election asks the controller to give each
// partition's leadership back to its preferred replica (the first one
// assigned), where that replica is alive and in sync (Kafka 0.8's
// PreferredReplicaLeaderElectionCommand):
//
//	kafka-preferred-replica-election --zookeeper=HOST:PORT[/chroot] [--topic=T[,T...]]
//
// It writes /admin/preferred_replica_election; the controller moves the
// leaders, each with a new leader epoch, and deletes the node when done.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/netdb11/kafka/broker/cli"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/spf13/pflag"
)

var command = cli.Command{
	Name: "kafka-preferred-replica-election",
	Usage: "Usage: kafka-preferred-replica-election --zookeeper=HOST:PORT[/chroot] [--topic=T1,T2]\n\n" +
		"Asks the controller to move each partition's leadership back to its preferred replica\n" +
		"(the first assigned) where that replica is alive and in sync.\n",
	Setup: func(fs *pflag.FlagSet) cli.RunFunc {
		zk := fs.String("zookeeper", "", "ZooKeeper connect string, host:port[,host:port][/chroot]; required")
		topics := fs.String("topic", "", "comma-separated topics (default: every replicated topic)")
		timeout := fs.Duration("timeout", 30*time.Second, "give up when ZooKeeper does not answer within this time")
		return func(ctx context.Context, fs *pflag.FlagSet, std cli.IO) error {
			if *zk == "" {
				return cli.Usagef("--zookeeper is required")
			}
			ctx, cancel := context.WithTimeout(ctx, *timeout)
			defer cancel()
			conn, err := zkcoord.Dial(ctx, zkcoord.Config{Connect: *zk, SessionTimeout: *timeout,
				Logger: slog.New(slog.NewTextHandler(std.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
			if err != nil {
				return err
			}
			defer conn.Close()
			all, err := zkcoord.ReplicationOn(conn).ReplicatedTopics()
			if err != nil {
				return err
			}
			var names []string
			if *topics == "" {
				for t := range all {
					names = append(names, t)
				}
			} else {
				names = strings.Split(*topics, ",")
			}
			slices.Sort(names)
			var ps []wire.TopicPartition
			for _, t := range names {
				a, ok := all[t]
				if !ok {
					return fmt.Errorf("topic %q does not exist (or is not replicated)", t)
				}
				for _, p := range a.Partitions() {
					ps = append(ps, wire.TopicPartition{Topic: t, Partition: p})
				}
			}
			if len(ps) == 0 {
				return errors.New("no replicated topics")
			}
			err = conn.CreatePersistent(zkcoord.PreferredReplicaElectionPath, zkcoord.MarshalElection(ps))
			if errors.Is(err, zkcoord.ErrNodeExists) {
				return errors.New("a preferred replica election is already in progress")
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(std.Stdout, "Started a preferred replica election for %d partitions.\n", len(ps))
			return nil
		}
	},
}

func main() { os.Exit(cli.Main(command)) }
