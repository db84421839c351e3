// Command kafka-console-consumer prints a partition's messages, one per line
// (Kafka 0.7's ConsoleConsumer, with a SimpleConsumer per broker):
//
//	kafka-console-consumer --broker-list=0:localhost:9092 --topic=T \
//		[--partition=N] [--from-beginning | --offset=N] [--max-messages=N]
//	kafka-console-consumer --zookeeper=localhost:2181 --topic=T --group=G \
//		[--from-beginning] [--max-messages=N]
//	kafka-console-consumer --zookeeper=localhost:2181 --whitelist=REGEX|--blacklist=REGEX \
//		[--group=G] [--from-beginning] [--max-messages=N]
//
// It starts at the log end unless told otherwise, and follows the log until
// --max-messages are printed, --timeout passes without a message, or SIGINT
// or SIGTERM arrive. With several brokers it reads partition N of each, in
// turn; for a replicated topic (one a broker of the list describes with
// METADATA) it reads the partition from its leader only, and follows the
// leader when it changes. With --whitelist or --blacklist (0.7's names;
// --zookeeper only) it reads every topic whose name matches (or does not
// match) the regex, topics created while it runs included.
package main

import (
	"context"
	"io"
	"os"

	"github.com/netdb11/kafka/broker/cli"
	"github.com/spf13/pflag"
)

var command = cli.Command{
	Name: "kafka-console-consumer",
	Usage: "Usage: kafka-console-consumer --broker-list=ID:HOST:PORT --topic=T [options]\n" +
		"       kafka-console-consumer --zookeeper=HOST:PORT --topic=T [--group=G] [options]\n" +
		"       kafka-console-consumer --zookeeper=HOST:PORT --whitelist=REGEX|--blacklist=REGEX [--group=G] [options]\n\n" +
		"Prints the messages of a partition to standard output, one per line.\n",
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
