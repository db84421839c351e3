// Command kafka-producer-perf-test measures how fast a producer publishes
// (Kafka 0.7's ProducerPerformance; paper §5, figure 4):
//
//	kafka-producer-perf-test --broker-list=0:localhost:9092 --topic=perf \
//		--messages=1000000 --message-size=200 --batch-size=50 [--async] [--json] \
//		[--request-required-acks=0|1|-1]
//
// In sync mode every request carries --batch-size messages, so it measures
// the protocol, not queueing; --async measures the async producer's queue
// with batch.size=--batch-size. With --json the last line of stdout is one
// JSON object: {"messages":N,"bytes":B,"seconds":S,"msgs_per_sec":X,"mb_per_sec":Y,"acks":A},
// A the request.required.acks of the run. With acks 1 or -1 a replicated
// topic's messages go to its partitions' leaders in PRODUCE_ACKS requests,
// each Send (or async batch) waiting for its acknowledgement; a topic that
// is not replicated keeps 0.7's path, one copy, and the tool says so once on
// stderr.
package main

import (
	"context"
	"io"
	"os"

	"github.com/netdb11/kafka/broker/cli"
	"github.com/spf13/pflag"
)

var command = cli.Command{
	Name: "kafka-producer-perf-test",
	Usage: "Usage: kafka-producer-perf-test --broker-list=ID:HOST:PORT --topic=T [options]\n\n" +
		"Publishes --messages messages of --message-size bytes and reports the rate.\n" +
		"Progress goes to stderr when it is a terminal.\n",
	Setup: func(fs *pflag.FlagSet) cli.RunFunc {
		cfg := defaultConfig()
		cfg.addFlags(fs)
		return func(ctx context.Context, fs *pflag.FlagSet, std cli.IO) error {
			cfg.ConfirmSet = fs.Changed("confirm")
			return cfg.run(ctx, std.Stdout, std.Stderr)
		}
	},
}

func main() { os.Exit(cli.Main(command)) }

// run is the command with the given arguments and streams, for tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return command.Execute(ctx, args, cli.IO{Stdout: stdout, Stderr: stderr})
}
