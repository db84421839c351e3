// Command kafka-offset-reset moves a stopped consumer group's committed
// offsets to the earliest or latest offset of each partition, or to a point
// in time, so that the group replays (paper §3.1, "stateless broker": a consumer can rewind to
// an old offset and re-consume data). It extends Kafka 0.7's
// UpdateOffsetsInZK (earliest | latest) with times.
//
//	kafka-offset-reset --zookeeper=127.0.0.1:2181 --group=G --topic=T --to=earliest
//	kafka-offset-reset ... --to=2011-06-12T10:00:00Z   (or --to=<unix milliseconds>)
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/broker/cli"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer/group"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/spf13/pflag"
)

var command = cli.Command{
	Name: "kafka-offset-reset",
	Usage: "Usage: kafka-offset-reset --zookeeper=HOST:PORT --group=G --topic=T --to=earliest|latest|TIME [--dry-run]\n\n" +
		"Sets the committed offset of every partition of the topics, for a stopped group, to the\n" +
		"partition's earliest or latest offset or to the segment written before a time.\n",
	Setup: func(fs *pflag.FlagSet) cli.RunFunc {
		zk := fs.String("zookeeper", "localhost:2181", "ZooKeeper connect string, host:port[,host:port][/chroot] (zk.connect)")
		grp := fs.String("group", "", "consumer group (groupid) whose offsets to move; it must have no live consumer. Required")
		topics := fs.String("topic", "", "comma-separated topics to reset; required")
		to := fs.String("to", "", "where to: earliest, latest, a time (RFC 3339, e.g. 2011-06-12T10:00:00Z) or Unix milliseconds; "+
			"a time means the start of the newest log segment written before it. Required")
		dryRun := fs.Bool("dry-run", false, "show the new offsets without writing them")
		timeout := fs.Duration("timeout", 30*time.Second, "give up when ZooKeeper or a broker does not answer within this time")
		return func(ctx context.Context, fs *pflag.FlagSet, std cli.IO) error {
			if *grp == "" || *topics == "" || *to == "" {
				return cli.Usagef("--group, --topic and --to are required")
			}
			at, err := parseTo(*to)
			if err != nil {
				return err
			}
			cfg := group.DefaultConfig()
			cfg.GroupID, cfg.ZkConnect = *grp, *zk
			cfg.ZkSessionTimeout, cfg.ZkConnectionTimeout, cfg.SocketTimeout = *timeout, *timeout, *timeout
			cfg.Logger = slog.New(slog.NewTextHandler(std.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
			ctx, cancel := context.WithTimeout(ctx, *timeout)
			defer cancel()
			resets, err := group.ResetOffsets(ctx, cfg, strings.Split(*topics, ","), at, *dryRun)
			for _, r := range resets {
				old := "none"
				if r.HadOld {
					old = strconv.FormatInt(int64(r.Old), 10)
				}
				fmt.Fprintf(std.Stdout, "%s %s: %s -> %d\n", r.Topic, zkcoord.PartitionNodeName(r.Partition), old, r.New)
			}
			if err != nil {
				return err
			}
			if *dryRun {
				fmt.Fprintf(std.Stdout, "dry run: would update the offset for %d partitions\n", len(resets))
			} else {
				fmt.Fprintf(std.Stdout, "updated the offset for %d partitions\n", len(resets))
			}
			return nil
		}
	},
}

func main() { os.Exit(cli.Main(command)) }

// run is the command with the given arguments and streams, for tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return command.Execute(ctx, args, cli.IO{Stdout: stdout, Stderr: stderr})
}

// parseTo turns --to into an OFFSETS time: -2, -1 or Unix milliseconds.
func parseTo(s string) (int64, error) {
	switch s {
	case "earliest", "smallest":
		return wire.EarliestTime, nil
	case "latest", "largest":
		return wire.LatestTime, nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return 0, fmt.Errorf("--to=%s: a time in milliseconds must not be negative", s)
		}
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, fmt.Errorf("--to=%q: want earliest, latest, an RFC 3339 time or Unix milliseconds", s)
	}
	return t.UnixMilli(), nil
}
