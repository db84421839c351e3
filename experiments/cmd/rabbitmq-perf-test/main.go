// Command rabbitmq-perf-test runs the paper's producer or consumer test against
// RabbitMQ with its own Go client and prints the result; with --json the last line
// of standard output is one JSON object shaped like Kafka's perf tools' output,
// plus throughput samples over time.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/netdb11/kafka/experiments/rabbitperf"
)

func main() {
	cfg := rabbitperf.DefaultConfig()
	fs := pflag.NewFlagSet("rabbitmq-perf-test", pflag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: rabbitmq-perf-test --mode=produce|consume|reset|depth [flags]\n\n"+
			"Producer or consumer throughput test against RabbitMQ (paper §5), with persistent\n"+
			"messages on a durable queue.\n\n%s", fs.FlagUsages())
	}
	mode := fs.String("mode", "produce", "produce: send --messages; consume: receive them; reset: delete and re-declare the queue; depth: print the queue's ready messages")
	fs.StringVar(&cfg.URL, "url", cfg.URL, "AMQP URL of the broker")
	fs.StringVar(&cfg.Queue, "queue", cfg.Queue, "durable queue name")
	fs.Int64Var(&cfg.Messages, "messages", cfg.Messages, "number of messages to send or receive")
	fs.IntVar(&cfg.MessageSize, "message-size", cfg.MessageSize, "payload bytes per message")
	fs.IntVar(&cfg.TxSize, "tx-size", 0, "commit an AMQP transaction every N messages (0: no transactions)")
	fs.IntVar(&cfg.Prefetch, "prefetch", cfg.Prefetch, "consumer prefetch count (basic.qos)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "stop after this long even if fewer messages moved (0: no cap)")
	fs.DurationVar(&cfg.SampleInterval, "sample-interval", cfg.SampleInterval, "throughput sampling interval")
	jsonOut := fs.Bool("json", false, "print the result as one JSON object on the last line")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == pflag.ErrHelp {
			return
		}
		os.Exit(2)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *mode, cfg, *jsonOut); err != nil {
		fmt.Fprintln(os.Stderr, "rabbitmq-perf-test:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, mode string, cfg rabbitperf.Config, jsonOut bool) error {
	switch mode {
	case "reset":
		return rabbitperf.Reset(cfg)
	case "depth":
		n, err := rabbitperf.Depth(cfg)
		if err != nil {
			return err
		}
		fmt.Println(n)
		return nil
	case "produce", "consume":
	default:
		return fmt.Errorf("unknown --mode %q (want produce, consume, reset or depth)", mode)
	}
	run := rabbitperf.Produce
	if mode == "consume" {
		run = rabbitperf.Consume
	}
	res, err := run(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s: %d messages, %.2f s, %.0f msg/s, %.2f MB/s\n", mode, res.Messages, res.Seconds, res.MsgsPerSec, res.MBPerSec)
	if jsonOut {
		fmt.Println(res.Marshal())
	}
	return nil
}
