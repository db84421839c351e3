// Command kafka-console-producer publishes the lines of its standard input,
// one message per line (Kafka 0.7's ConsoleProducer):
//
//	kafka-console-producer --broker-list=0:localhost:9092 --topic=T [--sync]
//
// By default it uses the async producer with batch.size=--batch-size and
// queue.time=--queue-time, as 0.7's tool does; --sync sends the lines that
// have arrived together (at most --batch-size) in one request. At end of
// input it sends what is queued and exits.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stderr); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "kafka-console-producer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stderr io.Writer) error {
	cfg := defaultConfig()
	fs := pflag.NewFlagSet("kafka-console-producer", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	cfg.addFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: kafka-console-producer --broker-list=ID:HOST:PORT --topic=T [options] < lines\n\n"+
			"Publishes each line of standard input as one message.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return cfg.run(ctx, stdin)
}
