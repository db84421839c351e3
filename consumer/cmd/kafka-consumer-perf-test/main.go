// Command kafka-consumer-perf-test measures how fast a consumer reads
// (Kafka 0.7's SimpleConsumerPerformance; paper §5, figure 5):
//
//	kafka-consumer-perf-test --broker-list=0:localhost:9092 --topic=perf \
//		[--partition=0] --messages=1000000 --fetch-size=1048576 [--json]
//
// It reads the partition from its earliest offset (or --offset) with
// fetches of --fetch-size bytes until --messages messages are read, or no
// new message arrives for --timeout. With --json the last line of stdout is
// one JSON object: {"messages":N,"bytes":B,"seconds":S,"msgs_per_sec":X,"mb_per_sec":Y}.
package main

import (
	"context"
	"io"
	"os"

	"github.com/netdb11/kafka/broker/cli"
	"github.com/spf13/pflag"
)

var command = cli.Command{
	Name: "kafka-consumer-perf-test",
	Usage: "Usage: kafka-consumer-perf-test --broker-list=ID:HOST:PORT --topic=T [options]\n\n" +
		"Reads --messages messages of a partition and reports the rate.\n" +
		"Progress goes to stderr when it is a terminal.\n",
	Setup: func(fs *pflag.FlagSet) cli.RunFunc {
		cfg := defaultConfig()
		cfg.addFlags(fs)
		return func(ctx context.Context, fs *pflag.FlagSet, std cli.IO) error {
			cfg.offsetSet = fs.Changed("offset")
			return cfg.run(ctx, std.Stdout, std.Stderr)
		}
	},
}

func main() { os.Exit(cli.Main(command)) }

// run is the command with the given arguments and streams, for tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return command.Execute(ctx, args, cli.IO{Stdout: stdout, Stderr: stderr})
}
