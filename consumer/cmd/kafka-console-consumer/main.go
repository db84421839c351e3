// Command kafka-console-consumer prints a partition's messages, one per line
// (Kafka 0.7's ConsoleConsumer, with a SimpleConsumer per broker):
//
//	kafka-console-consumer --broker-list=0:localhost:9092 --topic=T \
//		[--partition=N] [--from-beginning | --offset=N] [--max-messages=N]
//	kafka-console-consumer --zookeeper=localhost:2181 --topic=T --group=G \
//		[--from-beginning] [--max-messages=N]
//
// It starts at the log end unless told otherwise, and follows the log until
// --max-messages are printed, --timeout passes without a message, or SIGINT
// or SIGTERM arrive. With several brokers it reads partition N of each, in
// turn.
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
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "kafka-console-consumer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := defaultConfig()
	fs := pflag.NewFlagSet("kafka-console-consumer", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	cfg.addFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: kafka-console-consumer --broker-list=ID:HOST:PORT --topic=T [options]\n"+
			"       kafka-console-consumer --zookeeper=HOST:PORT --topic=T [--group=G] [options]\n\n"+
			"Prints the messages of a partition to standard output, one per line.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg.offsetSet = fs.Changed("offset")
	return cfg.run(ctx, stdout, stderr)
}
