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
		fmt.Fprintln(os.Stderr, "kafka-consumer-perf-test:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := defaultConfig()
	fs := pflag.NewFlagSet("kafka-consumer-perf-test", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	cfg.addFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: kafka-consumer-perf-test --broker-list=ID:HOST:PORT --topic=T [options]\n\n"+
			"Reads --messages messages of a partition and reports the rate.\n"+
			"Progress goes to stderr when it is a terminal.\n\n")
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
