package experiments

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/netdb11/kafka/broker/cli/perf"

	"github.com/netdb11/kafka/experiments/results"
)

// server is a long-running process (a broker) started by the harness, which owns
// it and stops it.
type server struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, valid after done
	log  *os.File

	stopOnce sync.Once
	stopErr  error
}

// startServer starts argv on host with its output in logPath.
func startServer(host Host, name, logPath string, argv ...string) (*server, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	// Not CommandContext: a server is stopped gracefully by stop, never killed
	// by a cancelled context alone.
	cmd := host.Command(context.Background(), argv...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("experiments: starting %s: %w", name, err), log.Close())
	}
	s := &server{name: name, cmd: cmd, done: make(chan struct{}), log: log}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	return s, nil
}

// pid is the server's process id.
func (s *server) pid() int { return s.cmd.Process.Pid }

// Stop is stop, for the Server interface.
func (s *server) Stop(timeout time.Duration) error { return s.stop(timeout) }

// Exited reports whether the process has ended, with its log and exit status.
func (s *server) Exited() (bool, error) {
	if !s.exited() {
		return false, nil
	}
	return true, fmt.Errorf("experiments: %s exited (log: %s): %v", s.name, s.log.Name(), s.err)
}

// CPUSeconds is the CPU time the process has used.
func (s *server) CPUSeconds() (float64, error) { return cpuSeconds(s.pid()) }

// RSSBytes is the process's resident memory.
func (s *server) RSSBytes() (int64, error) { return rssBytes(s.pid()) }

// exited reports whether the process has ended.
func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM (a graceful shutdown: Kafka flushes and writes its
// clean-shutdown marker), waits up to timeout, then kills the process group.
// Calling it again returns the first call's result.
func (s *server) stop(timeout time.Duration) error {
	s.stopOnce.Do(func() { s.stopErr = s.stopNow(timeout) })
	return s.stopErr
}

func (s *server) stopNow(timeout time.Duration) error {
	if !s.exited() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(timeout):
			_ = syscall.Kill(-s.pid(), syscall.SIGKILL)
			<-s.done
			return errors.Join(fmt.Errorf("experiments: %s ignored SIGTERM for %v and was killed", s.name, timeout), s.log.Close())
		}
	}
	var exitErr *exec.ExitError
	err := s.err
	if errors.As(err, &exitErr) && exitErr.Sys().(syscall.WaitStatus).Signaled() {
		err = nil // ended by our SIGTERM
	}
	if err != nil {
		err = fmt.Errorf("experiments: %s exited: %w", s.name, err)
	}
	return errors.Join(err, s.log.Close())
}

// waitPort polls until addr:port accepts TCP connections from the client host
// (reachable), the server exits, or the timeout passes.
func waitPort(ctx context.Context, s Server, name string, reachable func(context.Context, string, int) bool, addr string, port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if reachable(ctx, addr, port) {
			return nil
		}
		if gone, why := s.Exited(); gone {
			return fmt.Errorf("experiments: %s exited during start-up: %w", name, why)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("experiments: %s not accepting connections on %s:%d after %v", name, addr, port, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// driverRun is one run of a throughput driver.
type driverRun struct {
	host    Host
	argv    []string
	logPath string
	// sample, when set, starts a sampler once the PID is known; its samples
	// replace the driver's own.
	sample func(pid int, start time.Time) *perf.Sampler
	// link, when set, measures the testbed link while the driver runs.
	link *linkWatch
	// usage, when set, receives the machine's busy CPU time and the
	// driver's own while it ran.
	usage *results.Conditions
	// decode, when set, reads the result from the driver's standard
	// output instead of perf.ParseLast (drivers whose JSON line holds
	// more than a perf.Result).
	decode func(stdout []byte) (perf.Result, error)
}

// run executes the driver and parses the JSON result on its last line.
func (d driverRun) run(ctx context.Context) (perf.Result, error) {
	var stdout bytes.Buffer
	log, err := os.Create(d.logPath)
	if err != nil {
		return perf.Result{}, fmt.Errorf("experiments: %w", err)
	}
	defer log.Close()
	fmt.Fprintf(log, "$ %s\n", strings.Join(d.argv, " "))
	cmd := d.host.Command(ctx, d.argv...)
	cmd.Stdout, cmd.Stderr = &stdout, log
	cmd.WaitDelay = 5 * time.Second
	d.link.begin(ctx)
	stat0, statErr := readCPUStat()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		d.link.end(ctx)
		return perf.Result{}, fmt.Errorf("experiments: starting %s: %w", d.argv[0], err)
	}
	var sampler *perf.Sampler
	if d.sample != nil {
		sampler = d.sample(cmd.Process.Pid, start)
	}
	werr := cmd.Wait()
	d.link.end(ctx)
	if d.usage != nil {
		d.usage.WallSeconds = time.Since(start).Seconds()
		if stat1, err := readCPUStat(); err == nil && statErr == nil {
			d.usage.BusyCPUSeconds = busySeconds(stat0, stat1)
		}
		if ps := cmd.ProcessState; ps != nil {
			d.usage.ClientCPUSeconds = (ps.UserTime() + ps.SystemTime()).Seconds()
		}
	}
	var samples []perf.Sample
	if sampler != nil {
		samples = sampler.Stop(time.Now())
	}
	if _, err := log.Write(stdout.Bytes()); err != nil {
		return perf.Result{}, fmt.Errorf("experiments: writing %s: %w", d.logPath, err)
	}
	if werr != nil {
		return perf.Result{}, fmt.Errorf("experiments: %s failed: %w (log: %s)%s", filepath.Base(d.argv[0]), werr, d.logPath, tail(d.logPath))
	}
	var res perf.Result
	if d.decode != nil {
		res, err = d.decode(stdout.Bytes())
	} else {
		res, err = perf.ParseLast(&stdout)
	}
	if err != nil {
		return perf.Result{}, fmt.Errorf("experiments: %s: %w (log: %s)", filepath.Base(d.argv[0]), err, d.logPath)
	}
	if sampler != nil {
		res.Samples = samples
	}
	return res, nil
}

// tail returns the last lines of a log for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return "\n  " + strings.Join(lines, "\n  ")
}

// rssBytes reads VmRSS from /proc/PID/status.
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("experiments: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb * 1024, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("experiments: no VmRSS in /proc/%d/status", pid)
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times (100 on Linux).
const clockTicks = 100

// cpuSeconds returns the CPU time a process has used: the sum of its threads'
// run time from /proc/PID/task/*/schedstat (nanoseconds), or, where schedstat is
// missing, user+system time from /proc/PID/stat (10 ms ticks, too coarse for
// runs of a fraction of a second). Threads that have exited are not counted by
// schedstat; Go and the JVM keep theirs.
func cpuSeconds(pid int) (float64, error) {
	if tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid)); err == nil && len(tasks) > 0 {
		var ns int64
		ok := false
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue // the thread exited meanwhile
			}
			f := strings.Fields(string(b))
			if len(f) == 0 {
				continue
			}
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				ns += n
				ok = true
			}
		}
		if ok {
			return float64(ns) / 1e9, nil
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("experiments: %w", err)
	}
	// The command name may contain spaces; fields restart after its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("experiments: malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("experiments: short /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("experiments: /proc/%d/stat: %w", pid, err)
	}
	return float64(ut+st) / clockTicks, nil
}

// ioChars reads rchar and wchar (bytes read and written through syscalls,
// sockets included) from /proc/PID/io.
func ioChars(pid int) (rchar, wchar int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("experiments: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, perr := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if perr != nil {
			continue
		}
		switch k {
		case "rchar":
			rchar = n
		case "wchar":
			wchar = n
		}
	}
	return rchar, wchar, nil
}

// diskUsage sums, over the regular files under dir, the space allocated on disk
// (st_blocks * 512) and the apparent sizes.
func diskUsage(dir string) (allocated, apparent int64, err error) {
	err = walkFiles(dir, func(_ string, info fs.FileInfo) {
		apparent += info.Size()
		allocated += allocatedBytes(info)
	})
	return allocated, apparent, err
}

// fileBlocks maps each regular file under dir to its allocated bytes.
func fileBlocks(dir string) (map[string]int64, error) {
	out := map[string]int64{}
	err := walkFiles(dir, func(path string, info fs.FileInfo) { out[path] = allocatedBytes(info) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// walkFiles calls fn for every regular file under dir. Files that vanish
// during the walk are skipped: the servers delete files while they run.
func walkFiles(dir string, fn func(path string, info fs.FileInfo)) error {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		fn(path, info)
		return nil
	})
	if err != nil {
		return fmt.Errorf("experiments: measuring %s: %w", dir, err)
	}
	return nil
}

// allocatedBytes is the space a file takes on disk (its size where the
// platform does not say).
func allocatedBytes(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}

// growth is the space the files of after gained over before: new files count
// whole, grown files their growth. Files deleted in between (a store's garbage
// collection of old journal files) and files that shrank count nothing, so a
// clean-up during a run does not hide the space the run's messages took.
func growth(before, after map[string]int64) int64 {
	var n int64
	for path, a := range after {
		if d := a - before[path]; d > 0 {
			n += d
		}
	}
	return n
}

var digitRun = regexp.MustCompile(`[0-9]+`)

// growthByKind splits growth by kind of file: the base name with every digit run
// replaced by N ("db-N.log", "db.data", "N.idx"), so the report can say where a
// store's bytes went.
func growthByKind(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for path, a := range after {
		if d := a - before[path]; d > 0 {
			out[digitRun.ReplaceAllString(filepath.Base(path), "N")] += d
		}
	}
	return out
}

// describeKinds renders growthByKind per message, largest first:
// "db-N.log 300.1, db.data 150.2".
func describeKinds(kinds map[string]int64, messages int64) string {
	type kv struct {
		k string
		v int64
	}
	var list []kv
	for k, v := range kinds {
		list = append(list, kv{k, v})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].v > list[j].v || (list[i].v == list[j].v && list[i].k < list[j].k) })
	var parts []string
	for _, e := range list {
		parts = append(parts, fmt.Sprintf("%s %.1f", e.k, float64(e.v)/float64(messages)))
	}
	return strings.Join(parts, ", ")
}

// settle waits until the allocated size of dir stops changing (the servers flush
// and checkpoint asynchronously: KahaDB every few seconds, RabbitMQ's queue index
// on its own schedule), sampling every 250 ms, until it has been unchanged for
// quiet or max has passed. It returns the last measurement.
func settle(ctx context.Context, dir string, quiet, maxWait time.Duration) (allocated, apparent int64, err error) {
	deadline := time.Now().Add(maxWait)
	allocated, apparent, err = diskUsage(dir)
	if err != nil {
		return 0, 0, err
	}
	stableSince := time.Now()
	for time.Now().Before(deadline) && time.Since(stableSince) < quiet {
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		a, p, err := diskUsage(dir)
		if err != nil {
			return 0, 0, err
		}
		if a != allocated || p != apparent {
			allocated, apparent, stableSince = a, p, time.Now()
		}
	}
	return allocated, apparent, nil
}

// cpuTimes is one core's line of /proc/stat: busy and total time in ticks.
type cpuTimes struct{ busy, total uint64 }

// readCPUStat reads every core's times from /proc/stat, taken at one instant.
func readCPUStat() (map[int]cpuTimes, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	defer f.Close()
	return parseCPUStat(bufio.NewScanner(f))
}

// parseCPUStat reads the "cpuN user nice system idle iowait irq softirq steal
// ..." lines: busy is everything but idle and iowait. Guest time is already
// inside user and nice, so it is not added again.
func parseCPUStat(sc *bufio.Scanner) (map[int]cpuTimes, error) {
	out := map[int]cpuTimes{}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil {
			continue
		}
		var t cpuTimes
		for i, s := range f[1:min(len(f), 9)] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("experiments: /proc/stat %s: %q is not a number", f[0], s)
			}
			t.total += v
			if i != 3 && i != 4 { // idle, iowait
				t.busy += v
			}
		}
		out[n] = t
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("experiments: reading /proc/stat: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("experiments: no cpuN lines in /proc/stat")
	}
	return out, nil
}

// busySeconds is the CPU time all cores spent busy between two readings.
func busySeconds(before, after map[int]cpuTimes) float64 {
	var ticks uint64
	for core, a := range after {
		if b, ok := before[core]; ok && a.busy >= b.busy {
			ticks += a.busy - b.busy
		}
	}
	return float64(ticks) / clockTicks
}

// coreBusy is the fraction of core's time that was busy between two readings
// (0 when the core is unknown or no time passed).
func coreBusy(before, after map[int]cpuTimes, core int) float64 {
	b, ok1 := before[core]
	a, ok2 := after[core]
	if !ok1 || !ok2 || a.total <= b.total {
		return 0
	}
	return float64(a.busy-b.busy) / float64(a.total-b.total)
}
