package machine

import (
	"context"
	"strings"
	"testing"
)

func TestParseDD(t *testing.T) {
	got, err := parseDD("256+0 records in\n256+0 records out\n268435456 bytes (268 MB, 256 MiB) copied, 0.5 s, 537 MB/s\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := 268435456 / 0.5 / 1e6; got != want {
		t.Errorf("parseDD = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "dd: error writing", "10 bytes copied, 0 s"} {
		if _, err := parseDD(bad); err == nil {
			t.Errorf("parseDD(%q) succeeded", bad)
		}
	}
}

func TestDescribe(t *testing.T) {
	if testing.Short() {
		t.Skip("measures disk and loopback bandwidth")
	}
	m := Describe(context.Background(), Options{Dir: t.TempDir(), DiskBytes: 8 << 20, LoopbackBytes: 64 << 20})
	if len(m.Notes) > 0 {
		t.Errorf("notes: %v", m.Notes)
	}
	if m.Cores < 1 || m.MemoryBytes <= 0 || m.Kernel == "" || m.DiskWriteMBps <= 0 || m.LoopbackMBps <= 0 {
		t.Errorf("incomplete description %+v", m)
	}
	if s := m.Summary(); !strings.Contains(s, "cores") {
		t.Errorf("Summary = %q", s)
	}
}
