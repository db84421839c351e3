package kit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RSSBytes reads VmRSS from /proc/PID/status.
func RSSBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("kit: %w", err)
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
	return 0, fmt.Errorf("kit: no VmRSS in /proc/%d/status", pid)
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times (100 on Linux).
const clockTicks = 100

// CPUSeconds returns the CPU time a process has used: the sum of its threads'
// run time from /proc/PID/task/*/schedstat (nanoseconds), or, where schedstat is
// missing, user+system time from /proc/PID/stat (10 ms ticks, too coarse for
// runs of a fraction of a second). Threads that have exited are not counted by
// schedstat; Go and the JVM keep theirs.
func CPUSeconds(pid int) (float64, error) {
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
		return 0, fmt.Errorf("kit: %w", err)
	}
	// The command name may contain spaces; fields restart after its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("kit: malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("kit: short /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("kit: /proc/%d/stat: %w", pid, err)
	}
	return float64(ut+st) / clockTicks, nil
}

// IOChars reads rchar and wchar (bytes read and written through syscalls,
// sockets included) from /proc/PID/io.
func IOChars(pid int) (rchar, wchar int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("kit: %w", err)
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

// DiskUsage sums, over the regular files under dir, the space allocated on disk
// (st_blocks * 512) and the apparent sizes.
func DiskUsage(dir string) (allocated, apparent int64, err error) {
	err = walkFiles(dir, func(_ string, info fs.FileInfo) {
		apparent += info.Size()
		allocated += allocatedBytes(info)
	})
	return allocated, apparent, err
}

// FileBlocks maps each regular file under dir to its allocated bytes.
func FileBlocks(dir string) (map[string]int64, error) {
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
		return fmt.Errorf("kit: measuring %s: %w", dir, err)
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

// Growth is the space the files of after gained over before: new files count
// whole, grown files their growth. Files deleted in between (a store's garbage
// collection of old journal files) and files that shrank count nothing, so a
// clean-up during a run does not hide the space the run's messages took.
func Growth(before, after map[string]int64) int64 {
	var n int64
	for path, a := range after {
		if d := a - before[path]; d > 0 {
			n += d
		}
	}
	return n
}

var digitRun = regexp.MustCompile(`[0-9]+`)

// GrowthByKind splits growth by kind of file: the base name with every digit run
// replaced by N ("db-N.log", "db.data", "N.idx"), so the report can say where a
// store's bytes went.
func GrowthByKind(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for path, a := range after {
		if d := a - before[path]; d > 0 {
			out[digitRun.ReplaceAllString(filepath.Base(path), "N")] += d
		}
	}
	return out
}

// DescribeKinds renders GrowthByKind per message, largest first:
// "db-N.log 300.1, db.data 150.2".
func DescribeKinds(kinds map[string]int64, messages int64) string {
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

// Settle waits until the allocated size of dir stops changing (the servers flush
// and checkpoint asynchronously: KahaDB every few seconds, RabbitMQ's queue index
// on its own schedule), sampling every 250 ms, until it has been unchanged for
// quiet or max has passed. It returns the last measurement.
func Settle(ctx context.Context, dir string, quiet, maxWait time.Duration) (allocated, apparent int64, err error) {
	deadline := time.Now().Add(maxWait)
	allocated, apparent, err = DiskUsage(dir)
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
		a, p, err := DiskUsage(dir)
		if err != nil {
			return 0, 0, err
		}
		if a != allocated || p != apparent {
			allocated, apparent, stableSince = a, p, time.Now()
		}
	}
	return allocated, apparent, nil
}

// CPUTimes is one core's line of /proc/stat: busy and total time in ticks.
type CPUTimes struct{ busy, total uint64 }

// ReadCPUStat reads every core's times from /proc/stat, taken at one instant.
func ReadCPUStat() (map[int]CPUTimes, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return nil, fmt.Errorf("kit: %w", err)
	}
	defer f.Close()
	return parseCPUStat(bufio.NewScanner(f))
}

// parseCPUStat reads the "cpuN user nice system idle iowait irq softirq steal
// ..." lines: busy is everything but idle and iowait. Guest time is already
// inside user and nice, so it is not added again.
func parseCPUStat(sc *bufio.Scanner) (map[int]CPUTimes, error) {
	out := map[int]CPUTimes{}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil {
			continue
		}
		var t CPUTimes
		for i, s := range f[1:min(len(f), 9)] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("kit: /proc/stat %s: %q is not a number", f[0], s)
			}
			t.total += v
			if i != 3 && i != 4 { // idle, iowait
				t.busy += v
			}
		}
		out[n] = t
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("kit: reading /proc/stat: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("kit: no cpuN lines in /proc/stat")
	}
	return out, nil
}

// BusySeconds is the CPU time all cores spent busy between two readings.
func BusySeconds(before, after map[int]CPUTimes) float64 {
	var ticks uint64
	for core, a := range after {
		if b, ok := before[core]; ok && a.busy >= b.busy {
			ticks += a.busy - b.busy
		}
	}
	return float64(ticks) / clockTicks
}

// CoreBusy is the fraction of core's time that was busy between two readings
// (0 when the core is unknown or no time passed).
func CoreBusy(before, after map[int]CPUTimes, core int) float64 {
	b, ok1 := before[core]
	a, ok2 := after[core]
	if !ok1 || !ok2 || a.total <= b.total {
		return 0
	}
	return float64(a.busy-b.busy) / float64(a.total-b.total)
}
