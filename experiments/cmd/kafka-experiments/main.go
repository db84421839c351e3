// Command kafka-experiments reruns the NetDB'11 paper's Section 5 against real
// ActiveMQ and RabbitMQ, with one ablation per design decision, and writes the
// runs, figures and report.md (see --help).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/netdb11/kafka/experiments"
)

func main() {
	cfg, opt, err := experiments.ParseFlags(os.Args[1:])
	if errors.Is(err, pflag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafka-experiments:", err)
		os.Exit(2)
	}
	level := slog.LevelWarn
	if opt.Verbose {
		level = slog.LevelInfo
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if !opt.Quiet {
		cfg.Progress = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if opt.ReportOnly {
		err = experiments.Rereport(cfg.Out)
	} else {
		_, err = experiments.Run(ctx, cfg)
	}
	fmt.Fprintln(os.Stderr, "report:", filepath.Join(cfg.Out, "report.md"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafka-experiments:", err)
		os.Exit(1)
	}
}
