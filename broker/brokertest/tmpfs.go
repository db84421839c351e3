package brokertest

import (
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// MountTmpfs mounts a fresh tmpfs of size bytes on a new t.TempDir() and
// unmounts it when the test ends: a small disk to fill up, or (readOnly) a
// read-only one, for fault tests. It needs root (CAP_SYS_ADMIN); where the
// kernel refuses the mount, it skips the test and says why.
func MountTmpfs(t testing.TB, size int64, readOnly bool) string {
	t.Helper()
	dir := t.TempDir()
	var flags uintptr
	if readOnly {
		flags |= unix.MS_RDONLY
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, "size="+strconv.FormatInt(size, 10)); err != nil {
		t.Skipf("brokertest: cannot mount a tmpfs on %s (needs root): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("brokertest: unmount %s: %v", dir, err)
		}
	})
	return dir
}
