package kit

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// DiskWriteBytes counts a file this process writes and fsyncs; sumIOStat
// adds wbytes over an io.stat's devices.
func TestDiskWriteBytes(t *testing.T) {
	before, err := DiskWriteBytes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "w"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := DiskWriteBytes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// tmpfs has no backing device and counts nothing; a disk counts the MiB.
	var fs unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(f.Name()), &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type != unix.TMPFS_MAGIC && after-before < 1<<20 {
		t.Fatalf("write_bytes went from %d to %d for 1 MiB written and fsynced", before, after)
	}
	t.Logf("write_bytes +%d for 1 MiB written", after-before)

	if got := sumIOStat("8:0 rbytes=10 wbytes=200 rios=1 wios=2\n253:0 rbytes=0 wbytes=55 rios=0 wios=1\n", "wbytes"); got != 255 {
		t.Errorf("sumIOStat = %d, want 255", got)
	}
}
