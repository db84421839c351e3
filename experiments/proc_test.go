package experiments

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/broker/cli/perf"
)

func TestProcReaders(t *testing.T) {
	pid := os.Getpid()
	rss, err := rssBytes(pid)
	if err != nil || rss < 1<<20 {
		t.Errorf("rssBytes(self) = %d, %v", rss, err)
	}
	// Burn a little CPU so the counter is measurably positive.
	x := 0
	for start := time.Now(); time.Since(start) < 30*time.Millisecond; {
		x++
	}
	cpu, err := cpuSeconds(pid)
	if err != nil || cpu <= 0 {
		t.Errorf("cpuSeconds(self) = %v, %v (spun %d)", cpu, err, x)
	}
	if _, err := os.ReadFile("/proc/self/status"); err != nil {
		t.Fatal(err)
	}
	r, _, err := ioChars(pid)
	if err != nil || r <= 0 {
		t.Errorf("ioChars(self) rchar = %d, %v", r, err)
	}
	if _, err := rssBytes(1 << 30); err == nil {
		t.Error("rssBytes of a missing process succeeded")
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
	alloc, app, err := diskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if app != 10_005+32<<20 {
		t.Errorf("apparent = %d, want %d", app, 10_005+32<<20)
	}
	if alloc < 10_005 || alloc > 1<<20 {
		t.Errorf("allocated = %d, want the real blocks of 10,005 bytes (sparse file excluded)", alloc)
	}
	a2, p2, err := settle(context.Background(), dir, 300*time.Millisecond, 5*time.Second)
	if err != nil || a2 != alloc || p2 != app {
		t.Errorf("settle = %d, %d, %v; want %d, %d", a2, p2, err, alloc, app)
	}
	if _, _, err := diskUsage(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("a missing directory is empty, not an error: %v", err)
	}
}

func TestServerStartStop(t *testing.T) {
	log := filepath.Join(t.TempDir(), "server.log")
	s, err := startServer(localHost{"broker"}, "sleeper", log, "sleep", "600")
	if err != nil {
		t.Fatal(err)
	}
	if s.exited() {
		t.Fatal("server exited at once")
	}
	if err := s.stop(10 * time.Second); err != nil {
		t.Errorf("stop: %v", err)
	}
	if !s.exited() {
		t.Error("server still running after stop")
	}
	if err := s.stop(time.Second); err != nil {
		t.Errorf("second stop: %v", err)
	}
	// A server that ignores SIGTERM is killed.
	s2, err := startServer(localHost{"broker"}, "stubborn", log, "sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done")
	if err != nil {
		t.Fatal(err)
	}
	wait.Within(t, 10*time.Second, "the ready line in the log", func() bool { b, _ := os.ReadFile(log); return strings.Contains(string(b), "ready") })
	if err := s2.stop(200 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("stop of a stubborn server = %v, want a kill", err)
	}
}

func TestWaitPortFailsWhenServerExits(t *testing.T) {
	s, err := startServer(localHost{"broker"}, "quitter", filepath.Join(t.TempDir(), "q.log"), "true")
	if err != nil {
		t.Fatal(err)
	}
	err = waitPort(context.Background(), s, "quitter", dialOK, "127.0.0.1", 1, 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), "exited during start-up") {
		t.Errorf("waitPort = %v", err)
	}
}

func TestDriverRun(t *testing.T) {
	dir := t.TempDir()
	res := perf.NewResult(10, 2000, 0.5, nil)
	ok := driverRun{host: localHost{"client"}, logPath: filepath.Join(dir, "ok.log"),
		argv: []string{"sh", "-c", "echo progress >&2; echo 'some line'; echo '" + res.Marshal() + "'"}}
	got, err := ok.run(context.Background())
	if err != nil || got.Messages != 10 || got.MsgsPerSec != 20 {
		t.Errorf("run = %+v, %v", got, err)
	}
	b, _ := os.ReadFile(ok.logPath)
	if !strings.Contains(string(b), "progress") || !strings.Contains(string(b), `"messages":10`) {
		t.Errorf("driver log lacks its output: %q", b)
	}
	fail := driverRun{host: localHost{"client"}, logPath: filepath.Join(dir, "fail.log"),
		argv: []string{"sh", "-c", "echo broken >&2; exit 3"}}
	if _, err := fail.run(context.Background()); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("failing driver = %v, want its stderr in the error", err)
	}
	nojson := driverRun{host: localHost{"client"}, logPath: filepath.Join(dir, "nojson.log"), argv: []string{"echo", "done"}}
	if _, err := nojson.run(context.Background()); !errors.Is(err, perf.ErrNoResult) {
		t.Errorf("driver without JSON = %v, want ErrNoResult", err)
	}
}

func TestLogLines(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{20, 200, 1000} {
		if l := logLine(r, time.Now(), size); len(l) != size || strings.Contains(l, "\n") {
			t.Errorf("logLine(%d) has %d bytes: %q", size, len(l), l)
		}
	}
	path, err := writeLogLines(t.TempDir(), 200, 500)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	n := 0
	for sc.Scan() {
		if len(sc.Text()) != 200 {
			t.Fatalf("line %d has %d bytes", n, len(sc.Text()))
		}
		n++
	}
	if n != 500 {
		t.Errorf("%d lines, want 500", n)
	}
	// Log-like, not random: gzip shrinks it several times.
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if ratio := float64(len(b)) / float64(z.Len()); ratio < 2.5 {
		t.Errorf("gzip ratio %.2f, want log-like lines that compress >= 2.5x", ratio)
	}
}

func TestGrowth(t *testing.T) {
	before := map[string]int64{"journal-1": 4096, "journal-2": 8192, "index": 4096}
	after := map[string]int64{"journal-2": 16384, "journal-3": 4096, "index": 4096}
	// journal-1 was collected: it must not count against the run.
	if got, want := growth(before, after), int64(8192+4096); got != want {
		t.Errorf("growth = %d, want %d", got, want)
	}
	if got := growth(after, before); got != 4096 {
		t.Errorf("reverse growth = %d, want 4096 (journal-1 as a new file)", got)
	}
}

func TestGrowthByKind(t *testing.T) {
	before := map[string]int64{"/d/db-1.log": 4096, "/d/db.data": 8192}
	after := map[string]int64{"/d/db-1.log": 8192, "/d/db-2.log": 4096, "/d/db.data": 16384, "/d/q/00000000000000000001.kafka": 0}
	got := growthByKind(before, after)
	if got["db-N.log"] != 8192 || got["db.data"] != 8192 || len(got) != 2 {
		t.Errorf("growthByKind = %v", got)
	}
	if s := describeKinds(got, 1024); s != "db-N.log 8.0, db.data 8.0" {
		t.Errorf("describeKinds = %q", s)
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
	if got[0] != (cpuTimes{busy: 95, total: 500}) || got[1] != (cpuTimes{busy: 60, total: 465}) || len(got) != 2 {
		t.Errorf("parseCPUStat = %+v", got)
	}
	if _, err := parseCPUStat(bufio.NewScanner(strings.NewReader("cpu0 1 x 3 4 5\n"))); err == nil {
		t.Error("a malformed line parsed")
	}
	if _, err := parseCPUStat(bufio.NewScanner(strings.NewReader("intr 1\n"))); err == nil {
		t.Error("no cpuN lines parsed")
	}
	// A real /proc/stat has this machine's cores.
	if real, err := readCPUStat(); err != nil || len(real) == 0 {
		t.Errorf("readCPUStat = %v, %v", real, err)
	}
}

func TestCoreBusy(t *testing.T) {
	before := map[int]cpuTimes{0: {busy: 100, total: 1000}}
	after := map[int]cpuTimes{0: {busy: 175, total: 1100}}
	if b := coreBusy(before, after, 0); math.Abs(b-0.75) > 1e-12 {
		t.Errorf("coreBusy = %v, want 0.75", b)
	}
	if b := coreBusy(before, after, 1); b != 0 {
		t.Errorf("unknown core: %v, want 0", b)
	}
	if b := coreBusy(before, before, 0); b != 0 {
		t.Errorf("no time passed: %v, want 0", b)
	}
}
