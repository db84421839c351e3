package machine

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ways DropCaches empties the page cache.
const (
	// DropAll is `sync; echo 3 > /proc/sys/vm/drop_caches`: every clean page
	// of the machine (root only).
	DropAll = "drop_caches"
	// DropFiles is posix_fadvise(POSIX_FADV_DONTNEED) on each file after
	// fdatasync: that file's pages only, which needs no root.
	DropFiles = "fadvise"
)

// DropCaches evicts files from the page cache so that the next read of them
// comes from the disk (issue 14: reads cold after dropping caches). It syncs
// and fadvises each file (POSIX_FADV_DONTNEED after fdatasync, which needs
// no privilege), then, as root, also drops every clean page of the machine
// (drop_caches). It returns which of the two it did: DropAll, or DropFiles
// when not root (drop_caches then fails with EACCES and the machine's other
// cached files stay: only these files are cold).
func DropCaches(files ...string) (string, error) {
	var errs []error
	for _, name := range files {
		errs = append(errs, fadviseDontNeed(name))
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	if os.Geteuid() != 0 {
		return DropFiles, nil
	}
	unix.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
		return DropFiles, fmt.Errorf("machine: dropping caches: %w", err)
	}
	return DropAll, nil
}

func fadviseDontNeed(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("machine: %w", err)
	}
	defer f.Close()
	// Dirty pages are not evicted: write them first.
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("machine: fdatasync %s: %w", name, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("machine: fadvise %s: %w", name, err)
	}
	return nil
}

// Resident returns the bytes of files that are in the page cache, and their
// total size, by mincore(2) over a read-only mapping of each: whether a read
// of them will be hot (from memory) or cold (from the disk).
func Resident(files ...string) (resident, total int64, err error) {
	page := int64(os.Getpagesize())
	for _, name := range files {
		r, n, err := residentFile(name, page)
		if err != nil {
			return 0, 0, err
		}
		resident, total = resident+r, total+n
	}
	return resident, total, nil
}

func residentFile(name string, page int64) (resident, size int64, err error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, 0, fmt.Errorf("machine: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("machine: %w", err)
	}
	size = info.Size()
	if size == 0 {
		return 0, 0, nil
	}
	// Map and inspect at most 1 GiB at a time.
	const window = 1 << 30
	for off := int64(0); off < size; off += window {
		n := min(window, size-off)
		m, err := unix.Mmap(int(f.Fd()), off, int(n), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return 0, 0, fmt.Errorf("machine: mmap %s: %w", name, err)
		}
		vec := make([]byte, (n+page-1)/page)
		err = mincore(m, vec)
		if uerr := unix.Munmap(m); err == nil {
			err = uerr
		}
		if err != nil {
			return 0, 0, fmt.Errorf("machine: mincore %s: %w", name, err)
		}
		for i, v := range vec {
			if v&1 != 0 {
				resident += min(page, n-int64(i)*page)
			}
		}
	}
	return resident, size, nil
}

// mincore is mincore(2), which x/sys/unix does not wrap: one byte per page
// of b, bit 0 set when the page is resident.
func mincore(b, vec []byte) error {
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return errno
	}
	return nil
}
