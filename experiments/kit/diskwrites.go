package kit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DiskWriteBytes reads write_bytes from /proc/PID/io: the bytes the
// process caused to be written to storage (a write into the page cache
// counts when it dirties a page).
func DiskWriteBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, fmt.Errorf("kit: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("kit: /proc/%d/io: %w", pid, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("kit: no write_bytes in /proc/%d/io", pid)
}

// diskWriteBytes sums wbytes over the devices of the cgroup's io.stat
// (cgroup v2; v1's blkio is not read).
func (c cgroup) diskWriteBytes() (int64, error) {
	if !c.v2 {
		return 0, fmt.Errorf("kit: disk writes are read from cgroup v2's io.stat only")
	}
	path := filepath.Join(c.cpu, "io.stat")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("kit: %w", err)
	}
	return sumIOStat(string(b), "wbytes"), nil
}

// sumIOStat sums one key over the lines of an io.stat ("8:0 rbytes=1
// wbytes=2 ...").
func sumIOStat(s, key string) int64 {
	var sum int64
	for _, f := range strings.Fields(s) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			sum += n
		}
	}
	return sum
}

// DiskWriteBytes is what the process has written to storage so far.
func (p *Proc) DiskWriteBytes() (int64, error) { return DiskWriteBytes(p.Pid()) }

// DiskWriteBytes is what the peer's working process has written to storage
// so far.
func (p *peerProcess) DiskWriteBytes() (int64, error) { return DiskWriteBytes(p.pid()) }

// DiskWriteBytes is what the container's processes have written to storage
// so far.
func (c *container) DiskWriteBytes() (int64, error) { return c.cg.diskWriteBytes() }
