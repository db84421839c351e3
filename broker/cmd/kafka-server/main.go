// Command kafka-server runs a Kafka 0.7 broker:
//
//	kafka-server [server.properties] [--key=value ...]
//
// It reads Kafka 0.7's server.properties keys from the optional file, lets
// flags of the same names override them, and serves until SIGINT or
// SIGTERM, then shuts down gracefully (in-flight requests finish, the logs
// are flushed and marked cleanly shut down).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/spf13/pflag"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "kafka-server:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := pflag.NewFlagSet("kafka-server", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	broker.AddFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: kafka-server [server.properties] [--key=value ...]\n\n"+
			"Runs a Kafka 0.7 broker. Every key of Kafka 0.7's server.properties can be set\n"+
			"in the file or as a flag of the same name; flags win.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("at most one properties file, got %q", fs.Args())
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	cfg, err := broker.LoadConfig(fs.Arg(0), fs, logger)
	if err != nil {
		return err
	}
	var reg *zkcoord.Registrar
	if cfg.UsesZookeeper() {
		reg = zkcoord.NewRegistrar(zkcoord.Config{
			Connect:           cfg.ZkConnect,
			SessionTimeout:    cfg.ZkSessionTimeout,
			ConnectionTimeout: cfg.ZkConnectionTimeout,
			Logger:            logger,
		})
		cfg.Registrar = reg
	}
	b, err := broker.New(cfg)
	if err != nil {
		return err
	}
	err = b.Run(ctx)
	if reg != nil {
		err = errors.Join(err, reg.Close())
	}
	return err
}
