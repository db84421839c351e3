// Package machine describes the machine the experiments ran on: CPU, cores,
// memory, kernel, software versions, and the measured limits that bound what
// any messaging system can do there (issue 14: measured in the same run):
// sequential disk writes of new blocks (through the page cache with
// fdatasync, as dd conv=fdatasync, and with O_DIRECT), a cold sequential
// disk read after dropping the page cache, and one TCP stream over loopback,
// plain and shaped the way the producer and the consumer's fetches use it.
// The paper's testbed (§5: two 8-core 2 GHz machines, 16 GB, 6-disk RAID 10,
// 1 Gb link) is very different, and every report says so next to its
// numbers.
package machine

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// Machine is the description written next to every result.
type Machine struct {
	Hostname        string `json:"hostname"`
	CPUModel        string `json:"cpu_model"`
	Cores           int    `json:"cores"`
	MemoryBytes     int64  `json:"memory_bytes"`
	Kernel          string `json:"kernel"`
	OS              string `json:"os"`
	GoVersion       string `json:"go_version"`
	JavaVersion     string `json:"java_version,omitempty"`
	ActiveMQVersion string `json:"activemq_version,omitempty"`
	RabbitMQVersion string `json:"rabbitmq_version,omitempty"`
	ErlangVersion   string `json:"erlang_version,omitempty"`
	Filesystem      string `json:"filesystem,omitempty"`
	// DiskWriteMBps is the disk's sequential write limit (Disk's better
	// write probe; before issue 14, dd conv=fdatasync of DiskTestBytes).
	DiskWriteMBps float64 `json:"disk_write_mb_per_sec"`
	DiskTestBytes int64   `json:"disk_test_bytes"`
	// Disk is every disk probe's result; nil in files written before it.
	Disk *Disk `json:"disk,omitempty"`
	// LoopbackMBps is one TCP stream over loopback, 1 MiB writes, the
	// kernel's autotuned buffers: the best of loopbackTries.
	LoopbackMBps  float64 `json:"loopback_mb_per_sec"`
	LoopbackBytes int64   `json:"loopback_test_bytes"`
	// LoopbackProducerMBps and LoopbackFetchMBps are one stream shaped as
	// the producer's (ProducerStream) and as a fetch's (FetchStream); 0:
	// not measured.
	LoopbackProducerMBps float64 `json:"loopback_producer_mb_per_sec,omitempty"`
	LoopbackFetchMBps    float64 `json:"loopback_fetch_mb_per_sec,omitempty"`
	// DirtyRatio and DirtyBackgroundRatio are vm.dirty_ratio and
	// vm.dirty_background_ratio (percent of available memory): writers are
	// throttled to the disk's pace once the page cache holds about
	// DirtyLimitBytes of unwritten data, which sets the length of a
	// producer's burst. 0: not read.
	DirtyRatio           int   `json:"dirty_ratio,omitempty"`
	DirtyBackgroundRatio int   `json:"dirty_background_ratio,omitempty"`
	DirtyLimitBytes      int64 `json:"dirty_limit_bytes,omitempty"`
	// Writeback is the four writeback thresholds when the machine was
	// described; SetBy says who set them for the run ("" when they are
	// the machine's own).
	Writeback *Writeback `json:"writeback,omitempty"`
	SetBy     string     `json:"writeback_set_by,omitempty"`
	// LoadAverage is /proc/loadavg's 1-minute figure when the machine was
	// described.
	LoadAverage float64 `json:"load_average,omitempty"`
	// Notes lists what could not be measured and why.
	Notes []string `json:"notes,omitempty"`
}

// Options controls the measurements.
type Options struct {
	// Dir is where the disk test writes its temporary file (the experiments' data
	// directory, so the number describes the disk the logs live on).
	Dir string
	// DiskBytes is the size of each disk probe (default 1 GiB).
	DiskBytes int64
	// LoopbackBytes is how much each try of a loopback probe sends (default
	// 512 MiB).
	LoopbackBytes int64
	// ProducerRequestBytes is the size of one of the producer's PRODUCE
	// requests, for the producer-shaped stream (0: not measured).
	ProducerRequestBytes int
	// FetchBytes is the consumer's fetch size, for the fetch-shaped stream
	// (0: not measured).
	FetchBytes int
}

// loopbackTries is how many times each loopback stream runs; the best counts.
const loopbackTries = 3

// Describe gathers the description; measurements that fail are recorded in Notes
// rather than failing the whole description.
func Describe(ctx context.Context, opt Options) Machine {
	if opt.DiskBytes <= 0 {
		opt.DiskBytes = 1 << 30
	}
	if opt.LoopbackBytes <= 0 {
		opt.LoopbackBytes = 512 << 20
	}
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version()}
	m.Hostname, _ = os.Hostname()
	m.CPUModel = firstField("/proc/cpuinfo", "model name")
	if kb, err := strconv.ParseInt(strings.Fields(firstField("/proc/meminfo", "MemTotal") + " 0")[0], 10, 64); err == nil {
		m.MemoryBytes = kb * 1024
	}
	m.Kernel = strings.TrimSpace(readString("/proc/sys/kernel/osrelease"))
	m.OS = strings.Trim(firstField("/etc/os-release", "PRETTY_NAME"), `"`)
	m.JavaVersion = firstLine(command(ctx, "java", "-version"))
	m.ActiveMQVersion = command(ctx, "dpkg-query", "-W", "-f=${Version}", "activemq")
	m.RabbitMQVersion = command(ctx, "dpkg-query", "-W", "-f=${Version}", "rabbitmq-server")
	m.ErlangVersion = command(ctx, "dpkg-query", "-W", "-f=${Version}", "erlang-base")
	if opt.Dir != "" {
		if lines := strings.Split(strings.TrimSpace(command(ctx, "df", "--output=fstype,source", opt.Dir)), "\n"); len(lines) > 1 {
			m.Filesystem = strings.Join(strings.Fields(lines[len(lines)-1]), " ")
		}
		d, notes := MeasureDisk(ctx, opt.Dir, opt.DiskBytes)
		m.Disk, m.Notes = &d, append(m.Notes, notes...)
		m.DiskWriteMBps, m.DiskTestBytes = d.WriteLimitMBps(), opt.DiskBytes
	}
	m.LoopbackBytes = opt.LoopbackBytes
	// A limit is the best the machine does: on a shared machine one try
	// can land on a busy moment, so each stream runs loopbackTries times
	// and the best counts.
	probe := func(what string, dst *float64, s Stream) {
		for range loopbackTries {
			mbps, err := LoopbackStream(ctx, opt.LoopbackBytes, s)
			if err != nil {
				m.Notes = append(m.Notes, what+" loopback test failed: "+err.Error())
				return
			}
			*dst = max(*dst, mbps)
		}
	}
	probe("plain", &m.LoopbackMBps, Stream{})
	if opt.ProducerRequestBytes > 0 {
		probe("producer-shaped", &m.LoopbackProducerMBps, ProducerStream(opt.ProducerRequestBytes))
	}
	if opt.FetchBytes > 0 && opt.Dir != "" {
		probe("fetch-shaped", &m.LoopbackFetchMBps, FetchStream(opt.Dir, opt.FetchBytes))
	}
	m.DirtyRatio = readInt("/proc/sys/vm/dirty_ratio")
	m.DirtyBackgroundRatio = readInt("/proc/sys/vm/dirty_background_ratio")
	if kb, err := strconv.ParseInt(strings.Fields(firstField("/proc/meminfo", "MemAvailable") + " 0")[0], 10, 64); err == nil {
		m.DirtyLimitBytes = kb * 1024 * int64(m.DirtyRatio) / 100
	}
	if b := readInt("/proc/sys/vm/dirty_bytes"); b > 0 {
		m.DirtyLimitBytes = int64(b)
	}
	if w, err := ReadWriteback(VMSysctlDir); err == nil {
		m.Writeback = &w
	}
	m.LoadAverage = LoadAverage()
	return m
}

// LoadAverage returns /proc/loadavg's 1-minute load average (0 when it
// cannot be read): how many tasks were running or waiting for a CPU, which
// on a shared machine explains slow runs.
func LoadAverage() float64 {
	f := strings.Fields(readString("/proc/loadavg"))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// DirtyBytes returns the page cache's data not yet written to the disk
// (/proc/meminfo Dirty plus Writeback); 0 when it cannot be read.
func DirtyBytes() int64 {
	var total int64
	for _, key := range []string{"Dirty", "Writeback"} {
		if kb, err := strconv.ParseInt(strings.Fields(firstField("/proc/meminfo", key) + " 0")[0], 10, 64); err == nil {
			total += kb * 1024
		}
	}
	return total
}

func readInt(path string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(readString(path)))
	return n
}

// Summary is a one-line description for reports.
func (m Machine) Summary() string {
	disk := fmt.Sprintf("disk %.0f MB/s (dd fdatasync)", m.DiskWriteMBps)
	if m.Disk != nil {
		disk = fmt.Sprintf("disk writes %.0f MB/s, cold reads %.0f MB/s", m.DiskWriteMBps, m.Disk.ReadMBps)
	}
	s := fmt.Sprintf("%s, %d cores, %.1f GiB RAM, Linux %s, %s; %s, loopback %.0f MB/s (one TCP stream)",
		m.CPUModel, m.Cores, float64(m.MemoryBytes)/(1<<30), m.Kernel, m.OS, disk, m.LoopbackMBps)
	if m.Writeback != nil && m.SetBy != "" {
		s += fmt.Sprintf("; %s, set by %s for the run", m.Writeback, m.SetBy)
	}
	return s
}

func readString(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

// firstField returns the value of the first "key: value" or "key=value" line.
func firstField(path, key string) string {
	sc := bufio.NewScanner(strings.NewReader(readString(path)))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, key) {
			continue
		}
		rest := strings.TrimSpace(line[len(key):])
		if strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, "=") {
			return strings.TrimSpace(rest[1:])
		}
	}
	return ""
}

func command(ctx context.Context, name string, args ...string) string {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}
