package faults

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Tracer records what trials make (their working directories, testbed
// state directories and run ids; TrialConfig.Trace), and Leftovers lists what of it still
// exists: network namespaces (and with them every iptables rule and tc
// qdisc the nemeses add, which live only inside them), links and iptables
// rules in the root namespace naming the run or its subnet, cgroups,
// directories, and server processes started in them.
type Tracer struct {
	mu     sync.Mutex
	dirs   []string
	runs   []string
	faults []string
	// OnFault, when set, is called as a fault has been applied.
	OnFault func(string)
}

// Trace is a TrialConfig.Trace.
func (tr *Tracer) Trace(kind, name string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	switch kind {
	case "dir":
		tr.dirs = append(tr.dirs, name)
	case "testbed":
		tr.runs = append(tr.runs, name)
	case "fault":
		tr.faults = append(tr.faults, name)
		if tr.OnFault != nil {
			tr.OnFault(name)
		}
	}
}

// Faults lists the faults applied, as they were.
func (tr *Tracer) Faults() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.faults)
}

// Leftovers lists what of the traced things still exists; empty when the
// trials removed everything they made.
func (tr *Tracer) Leftovers() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []string
	nss, _ := os.ReadDir("/run/netns")
	for _, e := range nss {
		for _, id := range tr.runs {
			if strings.HasPrefix(e.Name(), "tb-"+id+"-") {
				out = append(out, "netns "+e.Name())
			}
		}
	}
	for _, d := range tr.dirs {
		if _, err := os.Stat(d); err == nil {
			out = append(out, "dir "+d)
		}
	}
	// The testbed's cgroups are named testbed-ID (v2: under the root; v1:
	// under the caller's cgroup in each hierarchy).
	for _, id := range tr.runs {
		filepath.WalkDir("/sys/fs/cgroup", func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if strings.Count(p, "/") > 8 {
				return filepath.SkipDir
			}
			if d.Name() == "testbed-"+id {
				out = append(out, "cgroup "+p)
				return filepath.SkipDir
			}
			return nil
		})
		if b, err := exec.Command("ip", "-o", "link").Output(); err == nil && strings.Contains(string(b), id) {
			out = append(out, "root namespace link naming run "+id)
		}
		if b, err := exec.Command("iptables-save").Output(); err == nil &&
			(strings.Contains(string(b), id) || strings.Contains(string(b), "10.211.0.")) {
			out = append(out, "root namespace iptables rule naming run "+id+" or the testbed subnet")
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		for _, d := range tr.dirs {
			if strings.Contains(cmd, d+"/") {
				out = append(out, "process "+cmd)
			}
		}
	}
	if len(tr.dirs) == 0 || len(tr.runs) == 0 {
		out = append(out, "nothing traced: the check would be empty")
	}
	return out
}
