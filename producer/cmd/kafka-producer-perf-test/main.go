// Command kafka-producer-perf-test measures how fast a producer publishes
// (Kafka 0.7's ProducerPerformance; paper §5, figure 4):
//
//	kafka-producer-perf-test --broker-list=0:localhost:9092 --topic=perf \
//		--messages=1000000 --message-size=200 --batch-size=50 [--async] [--json]
//
// In sync mode every request carries --batch-size messages, so it measures
// the protocol, not queueing; --async measures the async producer's queue
// with batch.size=--batch-size. With --json the last line of stdout is one
// JSON object: {"messages":N,"bytes":B,"seconds":S,"msgs_per_sec":X,"mb_per_sec":Y}.
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
		fmt.Fprintln(os.Stderr, "kafka-producer-perf-test:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := defaultConfig()
	fs := pflag.NewFlagSet("kafka-producer-perf-test", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	cfg.addFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: kafka-producer-perf-test --broker-list=ID:HOST:PORT --topic=T [options]\n\n"+
			"Publishes --messages messages of --message-size bytes and reports the rate.\n"+
			"Progress goes to stderr when it is a terminal.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return cfg.run(ctx, stdout, stderr)
}
