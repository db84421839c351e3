// Package machine describes the machine the experiments ran on: CPU, cores,
// memory, kernel, software versions, and two measured bandwidths that bound what
// any messaging system can do there: sequential disk writes (dd with
// conv=fdatasync) and TCP over loopback. The paper's testbed (§5: two 8-core
// 2 GHz machines, 16 GB, 6-disk RAID 10, 1 Gb link) is very different, and every
// report says so next to its numbers.
package machine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Machine is the description written next to every result.
type Machine struct {
	Hostname        string  `json:"hostname"`
	CPUModel        string  `json:"cpu_model"`
	Cores           int     `json:"cores"`
	MemoryBytes     int64   `json:"memory_bytes"`
	Kernel          string  `json:"kernel"`
	OS              string  `json:"os"`
	GoVersion       string  `json:"go_version"`
	JavaVersion     string  `json:"java_version,omitempty"`
	ActiveMQVersion string  `json:"activemq_version,omitempty"`
	RabbitMQVersion string  `json:"rabbitmq_version,omitempty"`
	ErlangVersion   string  `json:"erlang_version,omitempty"`
	Filesystem      string  `json:"filesystem,omitempty"`
	DiskWriteMBps   float64 `json:"disk_write_mb_per_sec"`
	DiskTestBytes   int64   `json:"disk_test_bytes"`
	LoopbackMBps    float64 `json:"loopback_mb_per_sec"`
	LoopbackBytes   int64   `json:"loopback_test_bytes"`
	// Notes lists what could not be measured and why.
	Notes []string `json:"notes,omitempty"`
}

// Options controls the measurements.
type Options struct {
	// Dir is where the disk test writes its temporary file (the experiments' data
	// directory, so the number describes the disk the logs live on).
	Dir string
	// DiskBytes is the size of the disk test (default 256 MiB).
	DiskBytes int64
	// LoopbackBytes is how much the loopback test sends (default 1 GiB).
	LoopbackBytes int64
}

// Describe gathers the description; measurements that fail are recorded in Notes
// rather than failing the whole description.
func Describe(ctx context.Context, opt Options) Machine {
	if opt.DiskBytes <= 0 {
		opt.DiskBytes = 256 << 20
	}
	if opt.LoopbackBytes <= 0 {
		opt.LoopbackBytes = 1 << 30
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
		if mbps, err := DiskWrite(ctx, opt.Dir, opt.DiskBytes); err != nil {
			m.Notes = append(m.Notes, "disk write test failed: "+err.Error())
		} else {
			m.DiskWriteMBps, m.DiskTestBytes = mbps, opt.DiskBytes
		}
	}
	if mbps, err := Loopback(ctx, opt.LoopbackBytes); err != nil {
		m.Notes = append(m.Notes, "loopback test failed: "+err.Error())
	} else {
		m.LoopbackMBps, m.LoopbackBytes = mbps, opt.LoopbackBytes
	}
	return m
}

// Summary is a one-line description for reports.
func (m Machine) Summary() string {
	return fmt.Sprintf("%s, %d cores, %.1f GiB RAM, Linux %s, %s; disk %.0f MB/s (dd fdatasync), loopback %.0f MB/s",
		m.CPUModel, m.Cores, float64(m.MemoryBytes)/(1<<30), m.Kernel, m.OS, m.DiskWriteMBps, m.LoopbackMBps)
}

var ddRate = regexp.MustCompile(`(\d+) bytes .* copied, ([0-9.]+) s`)

// DiskWrite measures sequential write bandwidth in MB/s (10^6 bytes) with
// `dd if=/dev/zero bs=1M conv=fdatasync`, which includes the final flush to disk.
func DiskWrite(ctx context.Context, dir string, size int64) (float64, error) {
	f, err := os.CreateTemp(dir, "ddtest-*")
	if err != nil {
		return 0, fmt.Errorf("machine: %w", err)
	}
	name := f.Name()
	if err := f.Close(); err != nil {
		return 0, errors.Join(fmt.Errorf("machine: %w", err), os.Remove(name))
	}
	defer os.Remove(name)
	count := max(size>>20, 1)
	out, err := exec.CommandContext(ctx, "dd", "if=/dev/zero", "of="+name, "bs=1M",
		"count="+strconv.FormatInt(count, 10), "conv=fdatasync").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("machine: dd: %w: %s", err, bytes.TrimSpace(out))
	}
	return parseDD(string(out))
}

func parseDD(out string) (float64, error) {
	m := ddRate.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("machine: unrecognised dd output %q", out)
	}
	n, err1 := strconv.ParseFloat(m[1], 64)
	s, err2 := strconv.ParseFloat(m[2], 64)
	if err := errors.Join(err1, err2); err != nil || s <= 0 {
		return 0, fmt.Errorf("machine: unrecognised dd output %q", out)
	}
	return n / s / 1e6, nil
}

// Loopback measures TCP bandwidth over 127.0.0.1 in MB/s (10^6 bytes): one
// connection, 1 MiB writes, size bytes in all.
func Loopback(ctx context.Context, size int64) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("machine: %w", err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	var recvErr error
	var received int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			recvErr = err
			return
		}
		defer c.Close()
		received, recvErr = io.Copy(io.Discard, c)
	}()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		ln.Close()
		wg.Wait()
		return 0, fmt.Errorf("machine: %w", err)
	}
	buf := make([]byte, 1<<20)
	start := time.Now()
	var sent int64
	var sendErr error
	for sent < size && sendErr == nil {
		var n int
		n, sendErr = c.Write(buf[:min(int64(len(buf)), size-sent)])
		sent += int64(n)
	}
	cerr := c.Close()
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	if err := errors.Join(sendErr, cerr, recvErr); err != nil {
		return 0, fmt.Errorf("machine: loopback transfer: %w", err)
	}
	if received != size || elapsed <= 0 {
		return 0, fmt.Errorf("machine: loopback transfer moved %d of %d bytes", received, size)
	}
	return float64(size) / elapsed / 1e6, nil
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
