package kit

import (
	"bufio"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProcReaders(t *testing.T) {
	pid := os.Getpid()
	rss, err := RSSBytes(pid)
	if err != nil || rss < 1<<20 {
		t.Errorf("RSSBytes(self) = %d, %v", rss, err)
	}
	// Burn a little CPU so the counter is measurably positive.
	x := 0
	for start := time.Now(); time.Since(start) < 30*time.Millisecond; {
		x++
	}
	cpu, err := CPUSeconds(pid)
	if err != nil || cpu <= 0 {
		t.Errorf("CPUSeconds(self) = %v, %v (spun %d)", cpu, err, x)
	}
	if _, err := os.ReadFile("/proc/self/status"); err != nil {
		t.Fatal(err)
	}
	r, _, err := IOChars(pid)
	if err != nil || r <= 0 {
		t.Errorf("IOChars(self) rchar = %d, %v", r, err)
	}
	if _, err := RSSBytes(1 << 30); err == nil {
		t.Error("RSSBytes of a missing process succeeded")
	}
}

func TestDiskUsageAndSettle(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a"), make([]byte, 10_000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "b"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A sparse file: large apparent size, little allocated.
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(32 << 20); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	alloc, app, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if app != 10_005+32<<20 {
		t.Errorf("apparent = %d, want %d", app, 10_005+32<<20)
	}
	if alloc < 10_005 || alloc > 1<<20 {
		t.Errorf("allocated = %d, want the real blocks of 10,005 bytes (sparse file excluded)", alloc)
	}
	a2, p2, err := Settle(context.Background(), dir, 300*time.Millisecond, 5*time.Second)
	if err != nil || a2 != alloc || p2 != app {
		t.Errorf("Settle = %d, %d, %v; want %d, %d", a2, p2, err, alloc, app)
	}
	if _, _, err := DiskUsage(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("a missing directory is empty, not an error: %v", err)
	}
}

func TestGrowth(t *testing.T) {
	before := map[string]int64{"journal-1": 4096, "journal-2": 8192, "index": 4096}
	after := map[string]int64{"journal-2": 16384, "journal-3": 4096, "index": 4096}
	// journal-1 was collected: it must not count against the run.
	if got, want := Growth(before, after), int64(8192+4096); got != want {
		t.Errorf("growth = %d, want %d", got, want)
	}
	if got := Growth(after, before); got != 4096 {
		t.Errorf("reverse growth = %d, want 4096 (journal-1 as a new file)", got)
	}
}

func TestGrowthByKind(t *testing.T) {
	before := map[string]int64{"/d/db-1.log": 4096, "/d/db.data": 8192}
	after := map[string]int64{"/d/db-1.log": 8192, "/d/db-2.log": 4096, "/d/db.data": 16384, "/d/q/00000000000000000001.kafka": 0}
	got := GrowthByKind(before, after)
	if got["db-N.log"] != 8192 || got["db.data"] != 8192 || len(got) != 2 {
		t.Errorf("GrowthByKind = %v", got)
	}
	if s := DescribeKinds(got, 1024); s != "db-N.log 8.0, db.data 8.0" {
		t.Errorf("DescribeKinds = %q", s)
	}
}

func TestParseCPUStat(t *testing.T) {
	const stat = `cpu  100 0 50 800 10 0 5 0 0 0
cpu0 60 0 30 400 5 0 5 0 0 0
cpu1 40 0 20 400 5 0 0 0 0 0
intr 12345
ctxt 999
`
	got, err := parseCPUStat(bufio.NewScanner(strings.NewReader(stat)))
	if err != nil {
		t.Fatal(err)
	}
	// busy: user+nice+system+irq+softirq+steal; idle and iowait are not.
	if got[0] != (CPUTimes{busy: 95, total: 500}) || got[1] != (CPUTimes{busy: 60, total: 465}) || len(got) != 2 {
		t.Errorf("parseCPUStat = %+v", got)
	}
	if _, err := parseCPUStat(bufio.NewScanner(strings.NewReader("cpu0 1 x 3 4 5\n"))); err == nil {
		t.Error("a malformed line parsed")
	}
	if _, err := parseCPUStat(bufio.NewScanner(strings.NewReader("intr 1\n"))); err == nil {
		t.Error("no cpuN lines parsed")
	}
	// A real /proc/stat has this machine's cores.
	if real, err := ReadCPUStat(); err != nil || len(real) == 0 {
		t.Errorf("ReadCPUStat = %v, %v", real, err)
	}
}

func TestCoreBusy(t *testing.T) {
	before := map[int]CPUTimes{0: {busy: 100, total: 1000}}
	after := map[int]CPUTimes{0: {busy: 175, total: 1100}}
	if b := CoreBusy(before, after, 0); math.Abs(b-0.75) > 1e-12 {
		t.Errorf("CoreBusy = %v, want 0.75", b)
	}
	if b := CoreBusy(before, after, 1); b != 0 {
		t.Errorf("unknown core: %v, want 0", b)
	}
	if b := CoreBusy(before, before, 0); b != 0 {
		t.Errorf("no time passed: %v, want 0", b)
	}
}
