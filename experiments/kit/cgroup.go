package kit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroup is where the kernel accounts a container's CPU time and memory: one
// directory per controller under cgroup v1 (cpuacct, memory), the same one for
// both under cgroup v2.
type cgroup struct {
	// v2 is true for the unified hierarchy.
	v2 bool
	// cpu holds cpuacct.usage (v1) or cpu.stat (v2).
	cpu string
	// mem holds memory.max_usage_in_bytes and memory.stat (v1), or memory.peak
	// and memory.stat (v2).
	mem string
}

// cgroupOf finds the cgroup of process pid (a container's init process) from
// /proc/PID/cgroup and the cgroup mounts of /proc/self/mountinfo.
func cgroupOf(pid int) (cgroup, error) {
	membership, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return cgroup{}, fmt.Errorf("kit: %w", err)
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return cgroup{}, fmt.Errorf("kit: %w", err)
	}
	cg, err := parseCgroup(string(membership), parseCgroupMounts(string(mountinfo)))
	if err != nil {
		return cgroup{}, fmt.Errorf("kit: process %d: %w", pid, err)
	}
	return cg, nil
}

// cgroupMounts maps a v1 controller ("cpuacct", "memory") or "" (the v2
// hierarchy) to its mount point and the hierarchy's path mounted there.
type cgroupMounts map[string]struct{ point, root string }

// parseCgroupMounts reads the cgroup and cgroup2 lines of a mountinfo file.
func parseCgroupMounts(mountinfo string) cgroupMounts {
	m := cgroupMounts{}
	sc := bufio.NewScanner(strings.NewReader(mountinfo))
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		f := strings.Fields(sc.Text())
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+3 >= len(f) {
			continue
		}
		root, point, fstype := f[3], f[4], f[sep+1]
		switch fstype {
		case "cgroup2":
			m[""] = struct{ point, root string }{point, root}
		case "cgroup":
			for _, opt := range strings.Split(f[sep+3], ",") {
				if opt == "cpuacct" || opt == "memory" {
					m[opt] = struct{ point, root string }{point, root}
				}
			}
		}
	}
	return m
}

// parseCgroup combines /proc/PID/cgroup ("ID:CONTROLLERS:PATH" lines) with the
// mounts. Controllers attached to v1 hierarchies are read there (a hybrid
// system also lists an empty v2 line); otherwise the v2 line's path.
func parseCgroup(membership string, mounts cgroupMounts) (cgroup, error) {
	var cg cgroup
	var v2path string
	hasV2 := false
	for _, line := range strings.Split(strings.TrimSpace(membership), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			v2path, hasV2 = parts[2], true
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			mt, ok := mounts[c]
			if !ok {
				continue
			}
			dir := filepath.Join(mt.point, strings.TrimPrefix(parts[2], mt.root))
			switch c {
			case "cpuacct":
				cg.cpu = dir
			case "memory":
				cg.mem = dir
			}
		}
	}
	if cg.cpu != "" && cg.mem != "" {
		return cg, nil
	}
	if mt, ok := mounts[""]; ok && hasV2 {
		dir := filepath.Join(mt.point, strings.TrimPrefix(v2path, mt.root))
		return cgroup{v2: true, cpu: dir, mem: dir}, nil
	}
	return cgroup{}, errors.New("no cpuacct and memory cgroup found (neither v1 controllers nor a v2 hierarchy)")
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("kit: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("kit: %s: %w", path, err)
	}
	return n, nil
}

// statField reads one "KEY VALUE" line of a flat-keyed cgroup file (cpu.stat,
// memory.stat).
func statField(path, key string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("kit: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("kit: %s: %s: %w", path, key, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("kit: no %q in %s", key, path)
}

// CpuSeconds is the CPU time every process of the cgroup has used.
func (c cgroup) CPUSeconds() (float64, error) {
	if c.v2 {
		us, err := statField(filepath.Join(c.cpu, "cpu.stat"), "usage_usec")
		return float64(us) / 1e6, err
	}
	ns, err := readInt(filepath.Join(c.cpu, "cpuacct.usage"))
	return float64(ns) / 1e9, err
}

// residentBytes is the cgroup's anonymous memory (the heap and stacks of its
// processes, what a process's RSS mostly is), without the page cache of the
// files it wrote.
func (c cgroup) residentBytes() (int64, error) {
	if c.v2 {
		return statField(filepath.Join(c.mem, "memory.stat"), "anon")
	}
	return statField(filepath.Join(c.mem, "memory.stat"), "total_rss")
}

// peakBytes is the most memory the cgroup has been charged since it started
// or since resetPeak, page cache included (the kernel reclaims that cache
// first when the limit is reached).
func (c cgroup) peakBytes() (int64, error) {
	if c.v2 {
		return readInt(filepath.Join(c.mem, "memory.peak"))
	}
	return readInt(filepath.Join(c.mem, "memory.max_usage_in_bytes"))
}

// resetPeak restarts peakBytes' record where the kernel allows it (cgroup v1);
// under v2 the peak stays the one since the container started.
func (c cgroup) resetPeak() error {
	if c.v2 {
		return nil
	}
	if err := os.WriteFile(filepath.Join(c.mem, "memory.max_usage_in_bytes"), []byte("0"), 0); err != nil {
		return fmt.Errorf("kit: resetting the memory peak: %w", err)
	}
	return nil
}
