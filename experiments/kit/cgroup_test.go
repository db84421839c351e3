package kit

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseCgroup(t *testing.T) {
	const hybridMounts = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	const systemdMounts = `25 24 0:22 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:8 - cgroup cgroup rw,cpu,cpuacct
26 24 0:23 / /sys/fs/cgroup/memory rw,nosuid shared:9 - cgroup cgroup rw,memory
`
	const v2Mounts = `29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate
`
	for _, tc := range []struct {
		name, membership, mounts string
		want                     cgroup
		wantErr                  bool
	}{
		{"v1 hybrid (cgroupfs driver)", "4:memory:/docker/abc\n2:cpuacct:/docker/abc\n0::/\n", hybridMounts,
			cgroup{cpu: "/sys/fs/cgroup/cpuacct/docker/abc", mem: "/sys/fs/cgroup/memory/docker/abc"}, false},
		{"v1 combined cpu,cpuacct (systemd driver)", "5:memory:/system.slice/docker-abc.scope\n3:cpu,cpuacct:/system.slice/docker-abc.scope\n", systemdMounts,
			cgroup{cpu: "/sys/fs/cgroup/cpu,cpuacct/system.slice/docker-abc.scope", mem: "/sys/fs/cgroup/memory/system.slice/docker-abc.scope"}, false},
		{"v2", "0::/system.slice/docker-abc.scope\n", v2Mounts,
			cgroup{v2: true, cpu: "/sys/fs/cgroup/system.slice/docker-abc.scope", mem: "/sys/fs/cgroup/system.slice/docker-abc.scope"}, false},
		{"v2 mounted at a sub-hierarchy (cgroup namespace)", "0::/docker/abc\n",
			"29 23 0:26 /docker /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			cgroup{v2: true, cpu: "/sys/fs/cgroup/abc", mem: "/sys/fs/cgroup/abc"}, false},
		{"no cgroup mounts", "0::/docker/abc\n", "", cgroup{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCgroup(tc.membership, parseCgroupMounts(tc.mounts))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCgroupFiles(t *testing.T) {
	v1 := t.TempDir()
	write := func(dir, name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(v1, "cpuacct.usage", "2500000000\n")
	write(v1, "memory.max_usage_in_bytes", "123456\n")
	write(v1, "memory.stat", "cache 100\nrss 7\ntotal_cache 200\ntotal_rss 4096\n")
	v2 := t.TempDir()
	write(v2, "cpu.stat", "usage_usec 1500000\nuser_usec 1000000\n")
	write(v2, "memory.peak", "654321\n")
	write(v2, "memory.stat", "anon 8192\nfile 300\n")
	for _, tc := range []struct {
		cg        cgroup
		cpu       float64
		rss, peak int64
	}{
		{cgroup{cpu: v1, mem: v1}, 2.5, 4096, 123456},
		{cgroup{v2: true, cpu: v2, mem: v2}, 1.5, 8192, 654321},
	} {
		if got, err := tc.cg.CPUSeconds(); err != nil || got != tc.cpu {
			t.Errorf("%+v: cpuSeconds = %v, %v; want %v", tc.cg, got, err, tc.cpu)
		}
		if got, err := tc.cg.residentBytes(); err != nil || got != tc.rss {
			t.Errorf("%+v: residentBytes = %v, %v; want %v", tc.cg, got, err, tc.rss)
		}
		if got, err := tc.cg.peakBytes(); err != nil || got != tc.peak {
			t.Errorf("%+v: peakBytes = %v, %v; want %v", tc.cg, got, err, tc.peak)
		}
	}
	if err := (cgroup{cpu: v1, mem: v1}).resetPeak(); err != nil {
		t.Fatal(err)
	}
	if got, _ := (cgroup{cpu: v1, mem: v1}).peakBytes(); got != 0 {
		t.Errorf("after resetPeak the v1 peak reads %d, want 0", got)
	}
	if _, err := (cgroup{cpu: t.TempDir()}).CPUSeconds(); err == nil {
		t.Error("cpuSeconds of a directory without cpuacct.usage succeeded")
	}
}
