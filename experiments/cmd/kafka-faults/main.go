// Command kafka-faults runs the fault-injection suite (issue 13): a cluster
// of brokers and ZooKeeper on the emulated testbed, a sequence-numbered
// workload, nemeses (kills, pauses, partitions, ZooKeeper loss, a disk that
// loses its unflushed tail) from a seed, and a checker over the history. It
// prints one verdict line per trial and one for the run, and writes
// OUT/report.md, each trial's history and timeline figure. Needs root.
//
//	kafka-faults --quick --out=results/faults
//	kafka-faults --nemesis=lose-tail --config=append --replay=3
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/netdb11/kafka/broker/cli"
	"github.com/netdb11/kafka/experiments/faults"
	"github.com/spf13/pflag"
)

var command = cli.Command{
	Name: "kafka-faults",
	Usage: "Usage: kafka-faults [--quick | --matrix=quick|unsafe|full] [--nemesis=K,...] [--config=C,...] [--zookeeper=standalone|ensemble] [--trials=N] [--seed=S | --replay=S] [--out=DIR]\n" +
		"       kafka-faults --availability [--session-timeouts=1.5s,3s,6s] [--trials=N] [--out=DIR]\n" +
		"       kafka-faults --rereport=DIR [--merge=DIR2,... [--replace]]\n\n" +
		"Runs trials of a workload against brokers and ZooKeeper on the emulated testbed while a nemesis\n" +
		"strikes, and checks the history for lost, unexpected, duplicated and reordered messages, offsets\n" +
		"that mean different messages, and diverged replicas. One verdict line per trial; a history,\n" +
		"result and timeline figure per trial under OUT/trials; OUT/report.md. Needs root.\n" +
		"Nemeses: " + strings.Join(faults.Nemeses, ", ") + ".\nConfigurations: " + strings.Join(faults.SetupNames, ", ") +
		" (none, append, flush: the 2011 broker, one copy, and how its producer learns the outcome;\n" +
		"the others: the replication layer, RF=3).\n" +
		"ZooKeeper: one server (standalone, the default), or --zookeeper=ensemble: three servers on hosts zk1..zk3,\n" +
		"which the zk-kill-* and zk-partition-* nemeses need (--matrix=full runs their cells on it either way).\n" +
		"Matrices (one trial takes 25-70 s here, most of it the cluster's start and the read back):\n" +
		"  quick   13 cells that each show something (compound for safe and acks1 among them), 1 trial each: about 5 minutes (make faults)\n" +
		"  unsafe  9 cells: each unsafe configuration under the nemesis it is known to lose writes to, beside a\n" +
		"          configuration that keeps the promise; --trials=10: 110 trials, about 55 minutes\n" +
		"  full    every configuration x every nemesis that applies (211 cells with compound, the power losses, the disk, retention, admin and partial-partition nemeses and the ensemble's); --trials=10: 2,110 trials, about 25 hours in one run (--shard=K/N splits it over runs side by side)\n" +
		"  soak    compound x safe, 500 seeds unless --trials says: several hours; runs side by side split it by --seed\n",
	Setup: func(fs *pflag.FlagSet) cli.RunFunc {
		quick := fs.Bool("quick", false, "one trial of each cell that shows something (make faults); the same as --matrix=quick --trials=1")
		matrix := fs.String("matrix", "", "a preset of cells instead of --nemesis x --config: quick, unsafe, full or soak")
		shard := fs.String("shard", "", "K/N: run every Nth cell of the --matrix from the Kth, so that N runs side by side split it (then --rereport=DIR --merge=the others)")
		sessionTimeout := fs.Int("zk.sessiontimeout.ms", 3000, "the brokers' ZooKeeper session timeout, ms")
		lagTime := fs.Int("replica.lag.time.max.ms", 0, "the brokers' replica.lag.time.max.ms (default 2000; 8000 under kip101)")
		nemeses := fs.StringSlice("nemesis", faults.Nemeses, "nemeses to run")
		configs := fs.StringSlice("config", faults.SetupNames, "configurations to run")
		trials := fs.Int("trials", 3, "trials (seeds) per cell")
		seed := fs.Int64("seed", 1, "first seed; trial i uses seed+i")
		replay := fs.Int64("replay", 0, "run exactly this seed, once per cell (replays a trial)")
		out := fs.String("out", "results/faults", "output directory")
		length := fs.Duration("length", 0, "workload run per trial (default 12 s; 16 s for replicated configurations)")
		brokers := fs.Int("brokers", 3, "broker hosts")
		zooKeeper := fs.String("zookeeper", faults.ZKStandalone, "ZooKeeper: standalone (one server) or ensemble (three, on hosts zk1..zk3)")
		bin := fs.String("bin", "", "directory of kafka-server (default: this program's)")
		verbose := fs.BoolP("verbose", "v", false, "log progress")
		availability := fs.Bool("availability", false, "the availability sweep: kill-leader (or --nemesis=stop-leader) trials against --config (default safe) for each --session-timeouts; OUT/availability.md and availability.png")
		sessionTimeouts := fs.DurationSlice("session-timeouts", []time.Duration{1500 * time.Millisecond, 3 * time.Second, 6 * time.Second}, "zk.sessiontimeout.ms values of the availability sweep")
		rereport := fs.String("rereport", "", "recheck every history under DIR/trials and rewrite DIR/report.md and DIR/cells.json (cells without histories kept as recorded); runs nothing")
		merge := fs.StringSlice("merge", nil, "with --rereport: add the cells of these runs' directories (their cells.json, or report.md) to DIR's report, copying their timelines")
		replace := fs.Bool("replace", false, "with --merge: a merged cell replaces DIR's recorded cell of the same nemesis and configuration instead of being refused")
		return func(ctx context.Context, fs *pflag.FlagSet, std cli.IO) error {
			if *rereport != "" && *availability {
				rows, err := faults.AvailabilityReport(*rereport)
				for _, r := range rows {
					fmt.Fprintf(std.Stdout, "%s %s zk.sessiontimeout.ms=%d: %d failovers, median %v, p99 %v\n", r.Nemesis, r.Setup, r.SessionTimeout.Milliseconds(),
						len(r.Failovers), faults.Quantile(r.Failovers, 0.5).Round(time.Millisecond), faults.Quantile(r.Failovers, 0.99).Round(time.Millisecond))
				}
				return err
			}
			if len(*merge) > 0 && (*rereport == "" || *availability) {
				return cli.Usagef("--merge goes with --rereport (of the safety matrix)")
			}
			if *replace && len(*merge) == 0 {
				return cli.Usagef("--replace goes with --merge")
			}
			if *rereport != "" {
				re := faults.Rereport
				if *replace {
					re = faults.RereportReplace
				}
				s, err := re(*rereport, *merge...)
				if s != nil {
					for _, c := range s.Records() {
						for _, v := range append(c.Verdicts, c.Errors...) {
							fmt.Fprintln(std.Stdout, v)
						}
					}
					fmt.Fprintln(std.Stdout, s.Verdict())
				}
				return err
			}
			if os.Geteuid() != 0 {
				return errors.New("needs root: it makes network namespaces, iptables rules and cgroups")
			}
			level := slog.LevelWarn
			if *verbose {
				level = slog.LevelInfo
			}
			logger := slog.New(slog.NewTextHandler(std.Stderr, &slog.HandlerOptions{Level: level}))
			if *bin == "" {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				*bin = filepath.Dir(exe)
			}
			if _, err := os.Stat(filepath.Join(*bin, "kafka-server")); err != nil {
				return cli.Usagef("no kafka-server in %s (make build, or --bin)", *bin)
			}
			switch *zooKeeper {
			case faults.ZKStandalone:
				if !fs.Changed("nemesis") {
					// Every nemesis that a standalone ZooKeeper allows.
					*nemeses = slices.DeleteFunc(slices.Clone(*nemeses), faults.NeedsEnsemble)
				}
				for _, n := range *nemeses {
					if faults.NeedsEnsemble(n) {
						return cli.Usagef("--nemesis=%s strikes a ZooKeeper ensemble: add --zookeeper=ensemble", n)
					}
				}
			case faults.ZKEnsemble:
			default:
				return cli.Usagef("--zookeeper=%q: want standalone or ensemble", *zooKeeper)
			}
			cfg := faults.SuiteConfig{Nemeses: *nemeses, Configs: *configs, Trials: *trials, Seed: *seed,
				Out: *out, Verdicts: std.Stdout, Progress: std.Stderr, Logger: logger,
				Trial: faults.TrialConfig{Brokers: *brokers, Length: *length, Bin: *bin, SessionTimeout: time.Duration(*sessionTimeout) * time.Millisecond, LagTime: time.Duration(*lagTime) * time.Millisecond,
					ZooKeeper: *zooKeeper}}
			if *availability {
				ac := faults.AvailabilityConfig{SessionTimeouts: *sessionTimeouts, Suite: cfg}
				if fs.Changed("nemesis") {
					if len(*nemeses) != 1 {
						return cli.Usagef("--availability takes one --nemesis: kill-leader or stop-leader")
					}
					ac.Nemesis = (*nemeses)[0]
				}
				if fs.Changed("config") {
					if len(*configs) != 1 {
						return cli.Usagef("--availability takes one --config")
					}
					ac.Setup = (*configs)[0]
				}
				if !fs.Changed("trials") {
					ac.Suite.Trials = 10
				}
				err := faults.RunAvailability(ctx, ac)
				fmt.Fprintf(std.Stdout, "report: %s\n", filepath.Join(*out, "availability.md"))
				return err
			}
			if *matrix != "" {
				pairs, ok := faults.Matrices[*matrix]
				if !ok {
					return cli.Usagef("--matrix=%q: want quick, unsafe, full or soak", *matrix)
				}
				if fs.Changed("nemesis") || fs.Changed("config") {
					return cli.Usagef("--matrix names the cells: leave out --nemesis and --config")
				}
				cfg.Pairs = pairs()
				if *shard != "" {
					part, err := faults.Shard(cfg.Pairs, *shard)
					if err != nil {
						return cli.Usagef("--shard: %v", err)
					}
					cfg.Pairs = part
				}
				if *matrix == "soak" && !fs.Changed("trials") {
					cfg.Trials = 500
				}
				// The full matrix's ensemble nemeses run on the ensemble.
				cfg.EnsembleCells = true
			}
			if *shard != "" && *matrix == "" {
				return cli.Usagef("--shard splits a --matrix")
			}
			if *quick {
				// The quick cells, one trial each, unless asked otherwise.
				if !fs.Changed("nemesis") && !fs.Changed("config") {
					cfg.Pairs = faults.QuickPairs
				}
				if !fs.Changed("trials") {
					cfg.Trials = 1
				}
				// Replicated runs as long as their fault needs (12 s
				// for most), unless --length says.
				cfg.Trial.Quick = true
			}
			if *replay != 0 {
				cfg.Seed, cfg.Trials = *replay, 1
			}
			s, err := faults.RunSuite(ctx, cfg)
			if s != nil {
				fmt.Fprintln(std.Stdout, s.Verdict())
				fmt.Fprintf(std.Stdout, "report: %s\n", filepath.Join(*out, "report.md"))
			}
			return err
		}
	},
}

func main() { os.Exit(cli.Main(command)) }
