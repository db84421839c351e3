// Command kafka-e2e-latency measures a replicated partition as a producer and
// a consumer see it (experiments/e2e): at a fixed offered load (--rate), the
// time from sending each message to its acknowledgement and to a consumer
// polling the leader receiving it (median, 99th and 99.9th percentile); with
// --rate=0, the producer's throughput with --connections closed loops of
// --batch-size messages. --request-required-acks is 1 or -1.
//
//	kafka-e2e-latency --broker-list=0:127.0.0.1:9092 --topic=T --request-required-acks=-1 --rate=10000 --seconds=5
//
// With --json the last line of standard output is one JSON object: the perf
// tools' fields plus "ack" and "end_to_end" percentiles in milliseconds.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/netdb11/kafka/broker/cli"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/experiments/e2e"
	"github.com/spf13/pflag"
)

var command = cli.Command{
	Name: "kafka-e2e-latency",
	Usage: "Usage: kafka-e2e-latency --broker-list=ID:HOST:PORT --topic=T [flags]\n\n" +
		"Produces with request.required.acks to a replicated partition's leader at a fixed rate\n" +
		"(or as fast as possible with --rate=0) and reports throughput, acknowledgement latency\n" +
		"and end-to-end latency (send to a polling consumer's receipt).\n",
	Setup: func(fs *pflag.FlagSet) cli.RunFunc {
		cfg := e2e.DefaultConfig()
		brokers := fs.String("broker-list", "", "any broker of the cluster, id:host:port (METADATA finds the leader); required")
		fs.StringVar(&cfg.Topic, "topic", "", "the replicated topic; required")
		partition := fs.Int32("partition", 0, "the partition")
		acks := fs.Int16("request-required-acks", cfg.Acks, "1: the leader appended; -1: every in-sync replica has it")
		fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "offered load in messages per second; 0: as fast as --connections allow")
		seconds := fs.Float64("seconds", cfg.Duration.Seconds(), "how long to produce")
		fs.IntVar(&cfg.MessageSize, "message-size", cfg.MessageSize, "payload bytes per message")
		fs.DurationVar(&cfg.Linger, "linger", cfg.Linger, "at a fixed rate: send the messages due every this long")
		fs.IntVar(&cfg.BatchSize, "batch-size", cfg.BatchSize, "with --rate=0: messages per request")
		fs.IntVar(&cfg.Connections, "connections", cfg.Connections, "with --rate=0: producer connections, one request in flight each")
		fs.BoolVar(&cfg.Consume, "consume", cfg.Consume, "poll the leader with a consumer and measure end-to-end latency")
		fs.DurationVar(&cfg.Poll, "poll", cfg.Poll, "the consumer's pause after a fetch that brought nothing")
		fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "bound on a request and on the wait for the last messages")
		jsonOut := fs.Bool("json", false, "print the result as one JSON object on the last line")
		return func(ctx context.Context, _ *pflag.FlagSet, std cli.IO) error {
			addr, err := firstBroker(*brokers)
			if err != nil {
				return err
			}
			cfg.Broker, cfg.Partition, cfg.Acks = addr, wire.Partition(*partition), *acks
			cfg.Duration = time.Duration(*seconds * float64(time.Second))
			if err := cfg.Validate(); err != nil {
				return cli.Usagef("%v", err)
			}
			res, err := e2e.Run(ctx, cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(std.Stderr, "%d messages in %.2f s: %.0f msg/s (offered %.0f); ack p50 %.3f ms p99 %.3f ms; end to end p50 %.3f ms p99 %.3f ms p99.9 %.3f ms (%d received)\n",
				res.Messages, res.Seconds, res.MsgsPerSec, res.Offered, res.Ack.P50, res.Ack.P99,
				res.EndToEnd.P50, res.EndToEnd.P99, res.EndToEnd.P999, res.Received)
			if *jsonOut {
				b, err := json.Marshal(res)
				if err != nil {
					return err
				}
				fmt.Fprintln(std.Stdout, string(b))
			}
			return nil
		}
	},
}

// firstBroker returns host:port of the first broker of a 0.7 broker list.
func firstBroker(list string) (string, error) {
	if list == "" {
		return "", cli.Usagef("--broker-list is required")
	}
	bs, err := wire.ParseBrokerList(list)
	if err != nil {
		return "", cli.Usagef("--broker-list: %v", err)
	}
	return bs[0].Addr(), nil
}

func main() { os.Exit(cli.Main(command)) }
