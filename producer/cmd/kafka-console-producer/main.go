// Command kafka-console-producer publishes the lines of its standard input,
// one message per line (Kafka 0.7's ConsoleProducer):
//
//	kafka-console-producer --broker-list=0:localhost:9092 --topic=T [--sync] \
//		[--request-required-acks=0|1|-1]
//
// By default it uses the async producer with batch.size=--batch-size and
// queue.time=--queue-time, as 0.7's tool does; --sync sends the lines that
// have arrived together (at most --batch-size) in one request. At end of
// input it sends what is queued and exits. With --request-required-acks 1
// or -1 a replicated topic's lines go to its partitions' leaders and count
// as delivered once acknowledged (a topic that is not replicated is said
// so once on standard error: its one broker acknowledges); the tool exits 1, saying how many lines
// were not acknowledged and why, if any was not (a refused --sync send
// stops the run).
package main

import (
	"context"
	"io"
	"os"

	"github.com/netdb11/kafka/broker/cli"
	"github.com/spf13/pflag"
)

var command = cli.Command{
	Name: "kafka-console-producer",
	Usage: "Usage: kafka-console-producer --broker-list=ID:HOST:PORT --topic=T [options] < lines\n\n" +
		"Publishes each line of standard input as one message.\n",
	Setup: func(fs *pflag.FlagSet) cli.RunFunc {
		cfg := defaultConfig()
		cfg.addFlags(fs)
		return func(ctx context.Context, fs *pflag.FlagSet, std cli.IO) error {
			return cfg.run(ctx, std.Stdin, std.Stderr)
		}
	},
}

func main() { os.Exit(cli.Main(command)) }

// run is the command with the given arguments and streams, for tests.
func run(ctx context.Context, args []string, stdin io.Reader, stderr io.Writer) error {
	return command.Execute(ctx, args, cli.IO{Stdin: stdin, Stderr: stderr})
}
