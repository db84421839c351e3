package machine

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pairOf is, for each writeback file, the one the kernel zeroes when it is
// written.
var pairOf = map[string]string{"dirty_ratio": "dirty_bytes", "dirty_bytes": "dirty_ratio",
	"dirty_background_ratio": "dirty_background_bytes", "dirty_background_bytes": "dirty_background_ratio"}

// kernelLike makes writeSysctl behave as /proc/sys/vm does: a byte count
// below two pages is refused, and a write zeroes the pair's other field.
// fail names a file whose writes fail. It is undone at the test's end.
func kernelLike(t *testing.T, fail string) {
	t.Helper()
	t.Cleanup(func() { writeSysctl = os.WriteFile })
	writeSysctl = func(path string, data []byte, perm fs.FileMode) error {
		name := filepath.Base(path)
		if name == fail {
			return errors.New("injected failure")
		}
		if n, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); strings.HasSuffix(name, "_bytes") && n < 8192 {
			return errors.New("invalid argument")
		}
		if err := os.WriteFile(path, data, perm); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(filepath.Dir(path), pairOf[name]), []byte("0\n"), perm)
	}
}

// fakeVM writes a copy of /proc/sys/vm's four writeback files, as this
// machine's defaults (20%, 10%, byte counts unset).
func fakeVM(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, v := range map[string]string{"dirty_ratio": "20", "dirty_background_ratio": "10", "dirty_bytes": "0", "dirty_background_bytes": "0"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLimitDirtyBytesSetsAndRestores(t *testing.T) {
	dir := fakeVM(t)
	kernelLike(t, "")
	restore, err := LimitDirtyBytes(dir, 256<<20, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadWriteback(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Bytes != 256<<20 || got.BackgroundBytes != 64<<20 {
		t.Fatalf("after LimitDirtyBytes: %+v, want 256 MiB and 64 MiB", got)
	}
	if got.Ratio != 0 || got.BackgroundRatio != 0 {
		t.Fatalf("after LimitDirtyBytes: %+v, want the ratios zeroed", got)
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	got, err = ReadWriteback(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got != (Writeback{Ratio: 20, BackgroundRatio: 10}) {
		t.Fatalf("after restore: %+v, want ratios 20 and 10, byte counts unset", got)
	}
	if s := got.String(); s != "vm.dirty_ratio 20%, vm.dirty_background_ratio 10%" {
		t.Fatalf("String() = %q", s)
	}
}

func TestLimitDirtyBytesRestoresByteCounts(t *testing.T) {
	dir := fakeVM(t)
	kernelLike(t, "")
	if err := SetWriteback(dir, Writeback{Bytes: 1 << 30, BackgroundBytes: 512 << 20}); err != nil {
		t.Fatal(err)
	}
	restore, err := LimitDirtyBytes(dir, 256<<20, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadWriteback(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got != (Writeback{Bytes: 1 << 30, BackgroundBytes: 512 << 20}) {
		t.Fatalf("after restore: %+v, want 1 GiB and 512 MiB", got)
	}
	if s := got.String(); s != "vm.dirty_bytes 1 GiB, vm.dirty_background_bytes 512 MiB" {
		t.Fatalf("String() = %q", s)
	}
}

// A write that fails half-way (the background threshold already set, the
// foreground one refused) leaves the previous settings in place.
func TestLimitDirtyBytesFailureRestores(t *testing.T) {
	dir := fakeVM(t)
	kernelLike(t, "dirty_bytes")
	if _, err := LimitDirtyBytes(dir, 256<<20, 64<<20); err == nil || !strings.Contains(err.Error(), "vm.dirty_bytes") {
		t.Fatalf("LimitDirtyBytes with dirty_bytes refused: %v, want an error naming vm.dirty_bytes", err)
	}
	if got, err := ReadWriteback(dir); err != nil || got != (Writeback{Ratio: 20, BackgroundRatio: 10}) {
		t.Fatalf("after a failed LimitDirtyBytes: %+v, %v; want ratios 20 and 10", got, err)
	}
}

func TestLimitDirtyBytesRejects(t *testing.T) {
	dir := fakeVM(t)
	for _, c := range [][2]int64{{0, 0}, {64 << 20, 256 << 20}, {256 << 20, 0}, {-1, -1}} {
		if _, err := LimitDirtyBytes(dir, c[0], c[1]); err == nil {
			t.Errorf("LimitDirtyBytes(%d, %d) succeeded", c[0], c[1])
		}
	}
	if got, _ := ReadWriteback(dir); got != (Writeback{Ratio: 20, BackgroundRatio: 10}) {
		t.Fatalf("settings changed by rejected calls: %+v", got)
	}
}

// The machine line says when the run set the thresholds, and only then.
func TestSummaryNamesWritebackSetting(t *testing.T) {
	m := Machine{Writeback: &Writeback{Bytes: 256 << 20, BackgroundBytes: 64 << 20}}
	if s := m.Summary(); strings.Contains(s, "dirty") {
		t.Errorf("Summary() = %q: names the machine's own settings", s)
	}
	m.SetBy = "--dirty-bytes"
	if s := m.Summary(); !strings.HasSuffix(s, "; vm.dirty_bytes 256 MiB, vm.dirty_background_bytes 64 MiB, set by --dirty-bytes for the run") {
		t.Errorf("Summary() = %q", s)
	}
}
