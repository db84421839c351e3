// Command kafka-topics creates, lists and describes replicated topics (Kafka
// 0.8's TopicCommand) through ZooKeeper:
//
//	kafka-topics --zookeeper=HOST:PORT[/chroot] --create --topic=T --partitions=N --replication-factor=R
//	kafka-topics --zookeeper=HOST:PORT[/chroot] --list
//	kafka-topics --zookeeper=HOST:PORT[/chroot] --describe [--topic=T] [--under-replicated-partitions]
//
// --create writes the topic's replica assignment to /brokers/topics/<topic>;
// the controller then elects each partition's leader and the brokers start
// replicating. Topics a 0.7 producer created on a broker are not replicated
// and are not listed.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netdb11/kafka/broker/cli"
	"github.com/netdb11/kafka/broker/replica"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/spf13/pflag"
)

type options struct {
	zk                 string
	create, list, desc bool
	topic              string
	partitions, rf     int
	assignment         string
	underReplicated    bool
	unavailable        bool
	timeout            time.Duration
}

var command = cli.Command{
	Name: "kafka-topics",
	Usage: "Usage: kafka-topics --zookeeper=HOST:PORT[/chroot] (--create|--list|--describe) [options]\n\n" +
		"Creates, lists and describes replicated topics (Kafka 0.8's TopicCommand).\n",
	Setup: func(fs *pflag.FlagSet) cli.RunFunc {
		o := &options{}
		fs.StringVar(&o.zk, "zookeeper", "", "ZooKeeper connect string, host:port[,host:port][/chroot]; required")
		fs.BoolVar(&o.create, "create", false, "create a topic")
		fs.BoolVar(&o.list, "list", false, "list the replicated topics")
		fs.BoolVar(&o.desc, "describe", false, "describe topics: each partition's leader, replicas, ISR and leader epoch")
		fs.StringVar(&o.topic, "topic", "", "the topic (--create: required; --describe: default every topic)")
		fs.IntVar(&o.partitions, "partitions", 1, "number of partitions (--create)")
		fs.IntVar(&o.rf, "replication-factor", 1, "replicas of each partition (--create)")
		fs.StringVar(&o.assignment, "replica-assignment", "", "explicit replicas, partitions separated by commas, brokers by colons: 0:1,1:2 (--create)")
		fs.BoolVar(&o.underReplicated, "under-replicated-partitions", false, "describe only partitions whose ISR is smaller than their replica list")
		fs.BoolVar(&o.unavailable, "unavailable-partitions", false, "describe only partitions whose leader is not alive")
		fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "give up when ZooKeeper does not answer within this time")
		return func(ctx context.Context, fs *pflag.FlagSet, std cli.IO) error { return run(ctx, o, std) }
	},
}

func main() { os.Exit(cli.Main(command)) }

func run(ctx context.Context, o *options, std cli.IO) error {
	if o.zk == "" {
		return cli.Usagef("--zookeeper is required")
	}
	n := 0
	for _, b := range []bool{o.create, o.list, o.desc} {
		if b {
			n++
		}
	}
	if n != 1 {
		return cli.Usagef("give exactly one of --create, --list, --describe")
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	zk, err := zkcoord.Dial(ctx, zkcoord.Config{Connect: o.zk, SessionTimeout: o.timeout,
		Logger: slog.New(slog.NewTextHandler(std.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		return err
	}
	defer zk.Close()
	switch {
	case o.create:
		return create(zk, o, std.Stdout)
	case o.list:
		topics, err := zkcoord.ReplicationOn(zk).ReplicatedTopics()
		if err != nil {
			return err
		}
		names := make([]string, 0, len(topics))
		for t := range topics {
			names = append(names, t)
		}
		slices.Sort(names)
		for _, t := range names {
			fmt.Fprintln(std.Stdout, t)
		}
		return nil
	default:
		return describe(zk, o, std.Stdout)
	}
}

func create(zk *zkcoord.Conn, o *options, out io.Writer) error {
	if o.topic == "" {
		return cli.Usagef("--create needs --topic")
	}
	if err := wire.ValidateTopic(o.topic); err != nil {
		return cli.Usagef("%v", err)
	}
	var a zkcoord.Assignment
	if o.assignment != "" {
		var err error
		if a, err = parseAssignment(o.assignment); err != nil {
			return cli.Usagef("--replica-assignment: %v", err)
		}
	} else {
		live, err := zkcoord.RegistryOn(zk).Brokers(false)
		if err != nil {
			return err
		}
		ids := make([]wire.BrokerID, 0, len(live))
		for id := range live {
			ids = append(ids, id)
		}
		if a, err = replica.AssignReplicas(ids, o.partitions, o.rf); err != nil {
			return err
		}
	}
	if err := zkcoord.ReplicationOn(zk).CreateTopic(o.topic, a); err != nil {
		if errors.Is(err, zkcoord.ErrNodeExists) {
			return fmt.Errorf("topic %q already exists", o.topic)
		}
		return err
	}
	fmt.Fprintf(out, "Created topic %q.\n", o.topic)
	return nil
}

// parseAssignment parses "0:1:2,1:2:0": partition i's replicas are the i-th
// colon-separated list.
func parseAssignment(s string) (zkcoord.Assignment, error) {
	a := make(zkcoord.Assignment)
	for i, part := range strings.Split(s, ",") {
		var rs []wire.BrokerID
		for _, f := range strings.Split(part, ":") {
			id, err := zkcoord.ParseBrokerID(strings.TrimSpace(f))
			if err != nil {
				return nil, err
			}
			if slices.Contains(rs, id) {
				return nil, fmt.Errorf("partition %d names broker %d twice", i, id)
			}
			rs = append(rs, id)
		}
		if i > 0 && len(rs) != len(a[0]) {
			return nil, fmt.Errorf("partition %d has %d replicas, partition 0 has %d", i, len(rs), len(a[0]))
		}
		a[wire.Partition(i)] = rs
	}
	return a, nil
}

func joinIDs(ids []wire.BrokerID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

func describe(zk *zkcoord.Conn, o *options, out io.Writer) error {
	topics, err := zkcoord.ReplicationOn(zk).ReplicatedTopics()
	if err != nil {
		return err
	}
	live, err := zkcoord.RegistryOn(zk).Brokers(false)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		if o.topic == "" || t == o.topic {
			names = append(names, t)
		}
	}
	if o.topic != "" && len(names) == 0 {
		return fmt.Errorf("topic %q does not exist (or is not replicated)", o.topic)
	}
	slices.Sort(names)
	// One topic's header line and its partitions' lines: the partition
	// lines of every topic are aligned together, under headers kept out
	// of the columns, so that the layout is the same whether all
	// partitions are listed or, with --under-replicated-partitions or
	// --unavailable-partitions, only some of them (and only the topics
	// that have such a partition, each under its header).
	type topicLines struct {
		header string
		rows   int // partition lines
	}
	var heads []topicLines
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 1, ' ', 0)
	for _, t := range names {
		a := topics[t]
		head := topicLines{header: fmt.Sprintf("Topic:%s PartitionCount:%d ReplicationFactor:%d", t, len(a), len(a[0]))}
		for _, p := range a.Partitions() {
			st, _, ok, err := zkcoord.ReplicationOn(zk).PartitionStateOf(t, p)
			if err != nil {
				return err
			}
			leader, epoch, isr := "none", "-", "" // no state yet: the controller has not acted
			_, up := live[st.Leader]
			if ok {
				epoch, isr = strconv.Itoa(int(st.LeaderEpoch)), joinIDs(st.ISR)
				if up {
					leader = strconv.Itoa(int(st.Leader))
				}
			}
			under := !ok || len(st.ISR) < len(a[p])
			unavailable := !ok || !up
			if (o.underReplicated && !under) || (o.unavailable && !unavailable) {
				continue
			}
			fmt.Fprintf(tw, "Topic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s\tLeaderEpoch: %s\n",
				t, p, leader, joinIDs(a[p]), isr, epoch)
			head.rows++
		}
		if head.rows > 0 || !(o.underReplicated || o.unavailable) {
			heads = append(heads, head)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	rows := strings.SplitAfter(table.String(), "\n")
	for _, h := range heads {
		if _, err := fmt.Fprintln(out, h.header); err != nil {
			return err
		}
		for _, r := range rows[:h.rows] {
			if _, err := io.WriteString(out, "\t"+r); err != nil {
				return err
			}
		}
		rows = rows[h.rows:]
	}
	return nil
}
