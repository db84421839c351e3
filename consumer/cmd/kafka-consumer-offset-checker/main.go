// Command kafka-consumer-offset-checker shows where a consumer group stands
// (Kafka 0.7's ConsumerOffsetChecker): for every partition of the group's
// topics, the committed offset, the log end, the lag between them and the
// consumer thread that owns the partition, followed by the live brokers.
//
//	kafka-consumer-offset-checker --zookeeper=127.0.0.1:2181 --group=G [--topic=T1,T2] [--watch=5s]
//
// Before a group's first commit its partitions are shown with offset "-"
// (its topics are found from its owners and its consumers' subscriptions);
// a topic named with --topic always has a row, "-" throughout when it has
// no partitions.
//
// With --watch it prints the table again every interval, each time under a
// line with the time, until interrupted: the text form of kafka-ui's lag.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netdb11/kafka/broker/cli"
	"github.com/netdb11/kafka/consumer/group"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/spf13/pflag"

	"github.com/netdb11/kafka/broker/wire"
)

var command = cli.Command{
	Name: "kafka-consumer-offset-checker",
	Usage: "Usage: kafka-consumer-offset-checker --zookeeper=HOST:PORT --group=G [--topic=T1,T2] [--watch=INTERVAL]\n\n" +
		"For each partition of the group's topics: the committed offset, the log end (from the\n" +
		"partition's broker), the lag between them and the owning consumer thread.\n",
	Setup: func(fs *pflag.FlagSet) cli.RunFunc {
		zk := fs.String("zookeeper", "localhost:2181", "ZooKeeper connect string, host:port[,host:port][/chroot] (zk.connect)")
		grp := fs.String("group", "", "consumer group (groupid); required")
		topics := fs.String("topic", "", "comma-separated topics (default: every topic the group has offsets for)")
		timeout := fs.Duration("timeout", 30*time.Second, "give up when ZooKeeper or a broker does not answer within this time")
		watch := fs.Duration("watch", 0, "print the table again every INTERVAL until interrupted (0: once)")
		return func(ctx context.Context, fs *pflag.FlagSet, std cli.IO) error {
			if *grp == "" {
				return cli.Usagef("--group is required")
			}
			if *watch < 0 {
				return cli.Usagef("--watch %v must not be negative", *watch)
			}
			check := func(ctx context.Context) error { return checkOnce(ctx, std, *zk, *grp, *topics, *timeout) }
			if *watch == 0 {
				return check(ctx)
			}
			for {
				fmt.Fprintf(std.Stdout, "== %s\n", time.Now().Format(time.DateTime))
				if err := check(ctx); err != nil {
					if ctx.Err() != nil {
						return nil
					}
					fmt.Fprintf(std.Stderr, "kafka-consumer-offset-checker: %v\n", err)
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(*watch):
				}
			}
		}
	},
}

// checkOnce prints the group's table once.
func checkOnce(ctx context.Context, std cli.IO, zk, grp, topics string, timeout time.Duration) error {
	cfg := group.DefaultConfig()
	cfg.GroupID, cfg.ZkConnect = grp, zk
	cfg.ZkSessionTimeout, cfg.ZkConnectionTimeout, cfg.SocketTimeout = timeout, timeout, timeout
	cfg.Logger = slog.New(slog.NewTextHandler(std.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var list []string
	if topics != "" {
		for _, t := range strings.Split(topics, ",") {
			if t != "" {
				list = append(list, t)
			}
		}
	}
	rows, brokers, err := group.Status(ctx, cfg, list)
	if err != nil {
		return err
	}
	if len(rows) == 0 && len(list) == 0 {
		return fmt.Errorf("group %s has no offsets, owns no partition and has no consumer subscribed to a topic", grp)
	}
	tw := tabwriter.NewWriter(std.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Group\tTopic\tPid\tOffset\tlogSize\tLag\tOwner")
	var problems []string
	// A topic asked for is never dropped: without partitions (no broker
	// registered it, no assignment, no offset of the group) it has a row
	// of its own, in its place among the others (rows are by topic).
	var empty []string
	for _, topic := range list {
		if !slices.ContainsFunc(rows, func(r group.PartitionStatus) bool { return r.Topic == topic }) && !slices.Contains(empty, topic) {
			empty = append(empty, topic)
		}
	}
	slices.Sort(empty)
	for _, r := range rows {
		for len(empty) > 0 && empty[0] < r.Topic {
			problems = append(problems, noPartitions(tw, grp, empty[0]))
			empty = empty[1:]
		}
		offset, logEnd, lag, owner := "-", "-", "-", "none"
		if r.HasCommitted {
			offset = strconv.FormatInt(int64(r.Committed), 10)
		}
		if r.LogEndErr == nil {
			logEnd = strconv.FormatInt(int64(r.LogEnd), 10)
		} else {
			problems = append(problems, fmt.Sprintf("%s %s: log end unknown: %v", r.Topic, zkcoord.PartitionNodeName(r.Partition), r.LogEndErr))
		}
		if l, ok := r.Lag(); ok {
			lag = strconv.FormatInt(l, 10)
		}
		if r.Owner != "" {
			owner = r.Owner
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", grp, r.Topic, zkcoord.PartitionNodeName(r.Partition), offset, logEnd, lag, owner)
	}
	for _, topic := range empty {
		problems = append(problems, noPartitions(tw, grp, topic))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(std.Stdout, "BROKER INFO")
	ids := make([]wire.BrokerID, 0, len(brokers))
	for id := range brokers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		fmt.Fprintf(std.Stdout, "%d -> %s\n", id, brokers[id].Addr())
	}
	for _, p := range problems {
		fmt.Fprintln(std.Stderr, p)
	}
	return nil
}

// noPartitions prints the row of a topic asked for that has no partitions
// and returns what to say of it on stderr.
func noPartitions(tw io.Writer, grp, topic string) string {
	fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\tnone\n", grp, topic)
	return fmt.Sprintf("%s: no partitions: no broker registered the topic, it has no replica assignment, and group %s has no offset for it", topic, grp)
}

func main() { os.Exit(cli.Main(command)) }

// run is the command with the given arguments and streams, for tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return command.Execute(ctx, args, cli.IO{Stdout: stdout, Stderr: stderr})
}
