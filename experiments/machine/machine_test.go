package machine

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

func TestStampMakesBlocksUnique(t *testing.T) {
	buf := make([]byte, 3*blockStamp)
	randomBuffer(buf)
	var seq uint64
	seen := map[uint64]bool{}
	for range 3 {
		stamp(buf, &seq)
		for off := 0; off < len(buf); off += blockStamp {
			v := binary.LittleEndian.Uint64(buf[off:])
			if seen[v] {
				t.Fatalf("block stamp %d repeated", v)
			}
			seen[v] = true
		}
	}
	if len(seen) != 9 {
		t.Errorf("%d distinct stamps, want 9", len(seen))
	}
}

func TestAlignedBuffer(t *testing.T) {
	for _, n := range []int{4096, 1 << 20} {
		b := alignedBuffer(n, 4096)
		if len(b) != n || !aligned(b, 4096) {
			t.Errorf("alignedBuffer(%d) has length %d, aligned %v", n, len(b), aligned(b, 4096))
		}
	}
}

// TestResidentAfterFadvise: a file just written is in the page cache; after
// fdatasync and POSIX_FADV_DONTNEED (what DropCaches does without root) it is
// not, and Resident says so.
func TestResidentAfterFadvise(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, make([]byte, 4<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	res, total, err := Resident(name)
	if err != nil {
		t.Fatal(err)
	}
	if total != 4<<20 || res < total/2 {
		t.Skipf("a freshly written file is only %d of %d bytes resident (filesystem without a page cache?)", res, total)
	}
	if err := fadviseDontNeed(name); err != nil {
		t.Fatal(err)
	}
	if res, _, err = Resident(name); err != nil || res > total/4 {
		t.Errorf("after fadvise DONTNEED %d of %d bytes resident (%v), want almost none", res, total, err)
	}
	if _, _, err := Resident(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Resident of a missing file succeeded")
	}
}

func TestLoopbackStreams(t *testing.T) {
	ctx := context.Background()
	for name, s := range map[string]Stream{
		"plain":    {},
		"producer": ProducerStream(10_500),
		"fetch":    FetchStream(t.TempDir(), 209_000),
	} {
		mbps, err := LoopbackStream(ctx, 16<<20+12_345, s)
		if err != nil || mbps <= 0 {
			t.Errorf("%s stream: %v MB/s, %v", name, mbps, err)
		}
	}
}

func TestDescribe(t *testing.T) {
	if testing.Short() {
		t.Skip("measures disk and loopback bandwidth")
	}
	m := Describe(context.Background(), Options{Dir: t.TempDir(), DiskBytes: 16 << 20, LoopbackBytes: 64 << 20,
		ProducerRequestBytes: 10_500, FetchBytes: 209_000})
	if len(m.Notes) > 0 && !strings.HasPrefix(m.Notes[0], "not root") {
		t.Errorf("notes: %v", m.Notes)
	}
	if m.Cores < 1 || m.MemoryBytes <= 0 || m.Kernel == "" || m.DiskWriteMBps <= 0 || m.LoopbackMBps <= 0 ||
		m.LoopbackProducerMBps <= 0 || m.LoopbackFetchMBps <= 0 || m.DirtyRatio <= 0 {
		t.Errorf("incomplete description %+v", m)
	}
	if m.Disk == nil || m.Disk.BufferedWriteMBps <= 0 || m.Disk.ReadMBps <= 0 || m.Disk.ReadDrop == "" {
		t.Fatalf("disk probes incomplete: %+v", m.Disk)
	}
	// The read was cold: the probe's file had left the page cache.
	if m.Disk.ReadResident > 0.25 {
		t.Errorf("%.0f%% of the file was cached when the cold read began", 100*m.Disk.ReadResident)
	}
	if s := m.Summary(); !strings.Contains(s, "cores") || !strings.Contains(s, "cold reads") {
		t.Errorf("Summary = %q", s)
	}
}

func aligned(b []byte, align int) bool { return uintptr(unsafe.Pointer(&b[0]))%uintptr(align) == 0 }
