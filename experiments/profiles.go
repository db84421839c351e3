package experiments

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/netdb11/kafka/experiments/results"
)

// profileFlag is the flag with which a perf tool writes a CPU profile of its
// run (runtime/pprof), when the tool has it.
const profileFlag = "--cpuprofile"

// profileArgs returns the flag that makes the perf tool bin write a CPU
// profile of run next to its log, and records the profile's path in the
// run's configuration (cpu_profile), for the report's appendix (issue 14);
// nothing when the tool's --help does not list --cpuprofile.
func (l *lab) profileArgs(ctx context.Context, bin string, run *results.Run) []string {
	if l.profiling == nil {
		l.profiling = map[string]bool{}
	}
	ok, known := l.profiling[bin]
	if !known {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		out, _ := exec.CommandContext(ctx, l.bin(bin), "--help").CombinedOutput()
		cancel()
		ok = strings.Contains(string(out), profileFlag)
		l.profiling[bin] = ok
	}
	if !ok {
		return nil
	}
	path := strings.TrimSuffix(l.logPath(run.ID), ".log") + ".cpu.pprof"
	if run.Config == nil {
		run.Config = map[string]string{}
	}
	run.Config["cpu_profile"] = filepath.Join("logs", filepath.Base(path))
	return []string{profileFlag + "=" + path}
}
