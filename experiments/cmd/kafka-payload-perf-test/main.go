// Command kafka-payload-perf-test publishes payloads read from a file (one per
// line) to a Kafka 0.7 broker and reports the rate; the experiments use it for
// the compression ablation on log-like messages. With --json the last line of
// standard output is one JSON object shaped like the perf tools' output, plus
// samples over time.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/netdb11/kafka/experiments/payloadperf"
)

func main() {
	var cfg payloadperf.Config
	fs := pflag.NewFlagSet("kafka-payload-perf-test", pflag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: kafka-payload-perf-test --broker-list=ID:HOST:PORT --topic=T --payload-file=F [flags]\n\n"+
			"Publishes the lines of --payload-file, round-robin, as messages and reports the rate.\n\n%s", fs.FlagUsages())
	}
	fs.StringVar(&cfg.BrokerList, "broker-list", "", "broker as id:host:port (0.7's broker.list)")
	fs.StringVar(&cfg.Topic, "topic", "test", "topic to publish to")
	fs.Int64Var(&cfg.Messages, "messages", 1_000_000, "number of messages to send")
	fs.IntVar(&cfg.BatchSize, "batch-size", 50, "messages per produce request")
	fs.IntVar(&cfg.Codec, "compression-codec", 0, "compression.codec: 0 none, 1 gzip, 2 snappy")
	file := fs.String("payload-file", "", "file with one payload per line")
	jsonOut := fs.Bool("json", false, "print the result as one JSON object on the last line")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == pflag.ErrHelp {
			return
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, *file, *jsonOut); err != nil {
		fmt.Fprintln(os.Stderr, "kafka-payload-perf-test:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg payloadperf.Config, file string, jsonOut bool) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	cfg.Payloads, err = payloadperf.ReadPayloads(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	res, err := payloadperf.Produce(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%d messages, %.2f s, %.0f msg/s\n", res.Messages, res.Seconds, res.MsgsPerSec)
	if jsonOut {
		fmt.Println(res.Marshal())
	}
	return nil
}
