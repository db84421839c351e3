package report

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/netdb11/kafka/experiments/results"
)

// TopFunctions summarises a CPU profile: its n functions with the most time
// of their own, one line each ("12.3% runtime.memmove"). It runs `go tool
// pprof -top`; a variable so tests can stand in for it.
var TopFunctions = func(profile string, n int) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", fmt.Sprintf("-nodecount=%d", n), profile).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go tool pprof -top %s: %w: %s", profile, err, firstLine(string(out)))
	}
	return parseTop(string(out), n), nil
}

// parseTop reads the rows of `go tool pprof -top` ("flat flat% sum% cum
// cum% name") into "flat% name" lines.
func parseTop(out string, n int) []string {
	var rows []string
	in := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && f[0] == "flat" && f[1] == "flat%" {
			in = true
			continue
		}
		if !in || len(f) < 6 || !strings.HasSuffix(f[1], "%") {
			continue
		}
		rows = append(rows, f[1]+" "+strings.Join(f[5:], " "))
		if len(rows) == n {
			break
		}
	}
	return rows
}

// writeProfiles writes the appendix of CPU profiles: for each Kafka
// configuration whose perf tool wrote one (cpu_profile in a run's
// configuration, a path under dir), the top functions of its median run's
// client; or, when no run has a profile, says so and where the hook is.
func writeProfiles(w Printf, set *results.Set, dir string) {
	w("## Appendix: CPU profiles\n\n")
	groups := groupRuns(set, func(r results.Run) bool {
		return r.OK() && (r.Config["cpu_profile"] != "" || r.Config["broker_cpu_profile"] != "")
	})
	if len(groups) == 0 {
		w("No CPU profiles were written in this run: the programs in this build (`kafka-producer-perf-test`, `kafka-consumer-perf-test`, `kafka-server`) do not list `--cpuprofile` in their `--help`, or the servers ran in containers. The hook is in place: the harness passes `--cpuprofile=logs/<run>.cpu.pprof` to every Kafka program that lists the flag, records the file as `cpu_profile` (the client's) and `broker_cpu_profile` in the run's configuration, and this appendix then gives, per figure, the top functions of the median run's profiles (`go tool pprof -top`); `make bench` profiles the same paths with `go test -cpuprofile`.\n\n")
		return
	}
	w("For each Kafka configuration, the CPU profiles of its median run (`--cpuprofile`, `runtime/pprof`) with their top functions by their own time (`go tool pprof -top`: flat%% of the profile's samples): the client's (the perf tool, this run only) and the broker's (`kafka-server`, its whole life: every run of that broker, so the same broker profile may stand for several configurations).\n\n")
	for _, g := range groups {
		r, _ := medianRun(g.runs)
		w("- **%s, %s, %s** (rep %d)\n", g.key.Experiment, g.key.Variant, g.key.Phase, r.Rep)
		for _, p := range []struct{ who, key string }{{"client", "cpu_profile"}, {"broker", "broker_cpu_profile"}} {
			rel := r.Config[p.key]
			if rel == "" {
				continue
			}
			path := rel
			if !filepath.IsAbs(path) {
				path = filepath.Join(dir, path)
			}
			top, err := TopFunctions(path, 6)
			head := fmt.Sprintf("  - %s (`%s`)", p.who, rel)
			switch {
			case err != nil:
				w("%s: could not be read: %s\n", head, firstLine(err.Error()))
			case len(top) == 0:
				w("%s: no samples.\n", head)
			default:
				w("%s: %s.\n", head, strings.Join(top, "; "))
			}
		}
	}
	w("\n")
}
