package experiments

import (
	"bufio"
	"math"
	"strings"
	"testing"
)

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
