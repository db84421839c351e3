package experiments

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/netdb11/kafka/experiments/kit"
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
	if !l.profiles(ctx, bin) {
		return nil
	}
	path := strings.TrimSuffix(l.logPath(run.ID), ".log") + ".cpu.pprof"
	if run.Config == nil {
		run.Config = map[string]string{}
	}
	run.Config["cpu_profile"] = filepath.Join("logs", filepath.Base(path))
	return []string{profileFlag + "=" + path}
}

// profiles reports whether the program bin writes CPU profiles: whether its
// --help lists profileFlag. The answer is kept for the invocation.
func (l *lab) profiles(ctx context.Context, bin string) bool {
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
	return ok
}

// serverProfile returns the flag that makes a broker (kafka-server) named
// name write a CPU profile of its whole life when it stops, and the file's
// path relative to the output directory; nothing in the container runtime
// (the file would be inside the container) or when kafka-server has no
// such flag.
func (l *lab) serverProfile(ctx context.Context, name string) (args []string, rel string) {
	if l.cfg.Runtime == ContainerRuntime || !l.profiles(ctx, kafkaServerBin) {
		return nil, ""
	}
	path := filepath.Join(l.logs, kit.SafeName("kafka-server-"+name)+".cpu.pprof")
	return []string{profileFlag + "=" + path}, filepath.Join("logs", filepath.Base(path))
}
