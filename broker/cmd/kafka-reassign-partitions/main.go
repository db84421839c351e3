// Command kafka-reassign-partitions moves partitions to other brokers (Kafka
// 0.8.2's ReassignPartitionsCommand, with Kafka 2.5's --cancel):
//
//	kafka-reassign-partitions --zookeeper=HOST:PORT[/chroot] --reassignment-json-file=F --execute
//	kafka-reassign-partitions --zookeeper=HOST:PORT[/chroot] --reassignment-json-file=F --verify
//	kafka-reassign-partitions --zookeeper=HOST:PORT[/chroot] [--reassignment-json-file=F] --cancel
//
// F holds {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]},
// at most 1 MiB. --execute checks the plan (every partition exists and is
// listed once; every replica list is non-empty, names each broker once,
// and only live brokers), then writes it, with each partition's current
// replicas, to /admin/reassign_partitions; the controller then adds the new
// replicas, waits for them to join the ISR, moves the leadership if need
// be, and drops the old replicas. --verify says, for each partition,
// whether that is done; it exits 1 while any is not. --cancel ends the
// reassignment of F's partitions (without F: of every partition being
// reassigned), restoring their original replicas.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/netdb11/kafka/broker/cli"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/spf13/pflag"
)

var command = cli.Command{
	Name: "kafka-reassign-partitions",
	Usage: "Usage: kafka-reassign-partitions --zookeeper=HOST:PORT[/chroot] --reassignment-json-file=F (--execute|--verify)\n" +
		"       kafka-reassign-partitions --zookeeper=HOST:PORT[/chroot] [--reassignment-json-file=F] --cancel\n\n" +
		"Moves partitions to other brokers, says whether a move is done, or cancels it.\n",
	Setup: func(fs *pflag.FlagSet) cli.RunFunc {
		zk := fs.String("zookeeper", "", "ZooKeeper connect string, host:port[,host:port][/chroot]; required")
		file := fs.String("reassignment-json-file", "", `the new replicas (at most 1 MiB): {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}; required except with --cancel`)
		execute := fs.Bool("execute", false, "start the reassignment")
		verify := fs.Bool("verify", false, "report whether each partition's reassignment is done (exit status 1 if not)")
		cancelFlag := fs.Bool("cancel", false, "end the reassignment of the file's partitions (without a file: of every partition being reassigned), restoring their original replicas")
		timeout := fs.Duration("timeout", 30*time.Second, "give up when ZooKeeper does not answer within this time")
		return func(ctx context.Context, fs *pflag.FlagSet, std cli.IO) error {
			n := 0
			for _, b := range []bool{*execute, *verify, *cancelFlag} {
				if b {
					n++
				}
			}
			if n != 1 {
				return cli.Usagef("give exactly one of --execute, --verify, --cancel")
			}
			if *zk == "" || *file == "" && !*cancelFlag {
				return cli.Usagef("--zookeeper and --reassignment-json-file are required")
			}
			var plan []zkcoord.Reassignment
			if *file != "" {
				var err error
				if plan, err = readPlan(*file); err != nil {
					return cli.Usagef("%v", err)
				}
			}
			ctx, cancelCtx := context.WithTimeout(ctx, *timeout)
			defer cancelCtx()
			conn, err := zkcoord.Dial(ctx, zkcoord.Config{Connect: *zk, SessionTimeout: *timeout,
				Logger: slog.New(slog.NewTextHandler(std.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
			if err != nil {
				return err
			}
			defer conn.Close()
			switch {
			case *execute:
				return executePlan(conn, plan, std)
			case *cancelFlag:
				return cancel(conn, plan, std.Stdout)
			default:
				return verifyPlan(conn, plan, std)
			}
		}
	},
}

func main() { os.Exit(cli.Main(command)) }

// executePlan checks plan against ZooKeeper's view of the cluster and writes it,
// with each partition's current replicas, to /admin/reassign_partitions.
func executePlan(conn *zkcoord.Conn, plan []zkcoord.Reassignment, std cli.IO) error {
	live, err := zkcoord.RegistryOn(conn).Brokers(false)
	if err != nil {
		return err
	}
	assignments := map[string]zkcoord.Assignment{}
	assignment := func(topic string) (zkcoord.Assignment, error) {
		if a, ok := assignments[topic]; ok {
			return a, nil
		}
		a, _, err := zkcoord.ReplicationOn(conn).TopicAssignment(topic)
		assignments[topic] = a
		return a, err
	}
	if err := checkPlan(plan, live, assignment); err != nil {
		return fmt.Errorf("refusing the reassignment:\n%w", err)
	}
	for i := range plan {
		plan[i].Original = slices.Clone(assignments[plan[i].Topic][plan[i].Partition])
	}
	err = conn.CreatePersistent(zkcoord.ReassignPartitionsPath, zkcoord.MarshalReassignments(plan))
	if errors.Is(err, zkcoord.ErrNodeExists) {
		return errors.New("a reassignment is already in progress (--cancel ends it)")
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(std.Stdout, "Started the reassignment of %d partitions.\n", len(plan))
	return nil
}

// verifyPlan prints, for each partition of plan, whether its reassignment is
// done; it fails with exit status 1 while any is not.
func verifyPlan(conn *zkcoord.Conn, plan []zkcoord.Reassignment, std cli.IO) error {
	pending := map[wire.TopicPartition]bool{}
	data, inProgress, err := conn.GetMaybe(zkcoord.ReassignPartitionsPath)
	if err != nil {
		return err
	} else if inProgress {
		rs, _ := zkcoord.ParseReassignments(data)
		for _, r := range rs {
			pending[wire.TopicPartition{Topic: r.Topic, Partition: r.Partition}] = true
		}
	}
	done := true
	for _, r := range plan {
		a, _, err := zkcoord.ReplicationOn(conn).TopicAssignment(r.Topic)
		if err != nil {
			return err
		}
		// Deviation: 0.8.2 says "failed" for a partition whose replicas
		// differ from the file's when no reassignment of it is pending,
		// also before any --execute; ZooKeeper keeps no trace of a
		// reassignment once over, so this says only what it knows.
		status := "completed successfully"
		switch {
		case pending[wire.TopicPartition{Topic: r.Topic, Partition: r.Partition}]:
			status, done = "is still in progress", false
		case slices.Equal(a[r.Partition], r.Replicas):
		case inProgress:
			status, done = fmt.Sprintf("is not part of the reassignment in progress (replicas are %v, not %v)", a[r.Partition], r.Replicas), false
		default:
			status, done = fmt.Sprintf("is not done: no reassignment in progress (replicas are %v, not %v; --execute starts it)", a[r.Partition], r.Replicas), false
		}
		fmt.Fprintf(std.Stdout, "Reassignment of partition %s-%d %s\n", r.Topic, r.Partition, status)
	}
	if !done {
		return &cli.ExitError{Code: 1}
	}
	return nil
}
