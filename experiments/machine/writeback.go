package machine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// VMSysctlDir is where the kernel's writeback settings live.
const VMSysctlDir = "/proc/sys/vm"

// writeSysctl writes one setting; tests replace it with one that also does
// what the kernel does on a write (zero the pair's other field) or fails.
var writeSysctl = os.WriteFile

// Writeback is the kernel's threshold of unwritten page cache, each
// threshold either a percentage of available memory (the *Ratio fields) or
// a byte count (the *Bytes fields): the kernel keeps one of each pair and
// writing one zeroes the other. Past Bytes (or Ratio), writers are
// throttled to the disk's pace; past BackgroundBytes (BackgroundRatio),
// the flusher threads start writing back.
type Writeback struct {
	Ratio           int   `json:"dirty_ratio"`
	BackgroundRatio int   `json:"dirty_background_ratio"`
	Bytes           int64 `json:"dirty_bytes"`
	BackgroundBytes int64 `json:"dirty_background_bytes"`
}

// String is the setting as a report gives it, e.g. "vm.dirty_bytes 256 MiB,
// vm.dirty_background_bytes 64 MiB".
func (w Writeback) String() string {
	fg := fmt.Sprintf("vm.dirty_ratio %d%%", w.Ratio)
	if w.Bytes > 0 {
		fg = "vm.dirty_bytes " + sizeString(w.Bytes)
	}
	bg := fmt.Sprintf("vm.dirty_background_ratio %d%%", w.BackgroundRatio)
	if w.BackgroundBytes > 0 {
		bg = "vm.dirty_background_bytes " + sizeString(w.BackgroundBytes)
	}
	return fg + ", " + bg
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadWriteback reads the four settings from dir (VMSysctlDir, or a copy of
// it in tests).
func ReadWriteback(dir string) (Writeback, error) {
	var w Writeback
	var errs []error
	read := func(name string) int64 {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			errs = append(errs, err)
			return 0
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("machine: %s: %q is not a number", name, strings.TrimSpace(string(b))))
		}
		return n
	}
	w.Ratio, w.BackgroundRatio = int(read("dirty_ratio")), int(read("dirty_background_ratio"))
	w.Bytes, w.BackgroundBytes = read("dirty_bytes"), read("dirty_background_bytes")
	return w, errors.Join(errs...)
}

// SetWriteback writes w's thresholds to dir: of each pair, the byte count
// when it is set, else the ratio (the kernel rejects a byte count of 0 and
// zeroes the other field of the pair itself). The background threshold is
// written before and after the foreground one: whichever way the two move,
// it ends as w says (a background threshold above the foreground one
// counts, while it lasts, as half the foreground one).
func SetWriteback(dir string, w Writeback) error {
	write := func(name string, v int64) error {
		if err := writeSysctl(filepath.Join(dir, name), []byte(strconv.FormatInt(v, 10)+"\n"), 0o644); err != nil {
			return fmt.Errorf("machine: setting vm.%s to %d: %w", name, v, err)
		}
		return nil
	}
	fg := func() error {
		if w.Bytes > 0 {
			return write("dirty_bytes", w.Bytes)
		}
		return write("dirty_ratio", int64(w.Ratio))
	}
	bg := func() error {
		if w.BackgroundBytes > 0 {
			return write("dirty_background_bytes", w.BackgroundBytes)
		}
		return write("dirty_background_ratio", int64(w.BackgroundRatio))
	}
	if err := bg(); err != nil {
		return err
	}
	if err := fg(); err != nil {
		return err
	}
	return bg()
}

// LimitDirtyBytes sets the writeback thresholds in dir to dirty bytes (the
// writers' throttle) and background bytes (the flusher's start), and
// returns the function that puts the previous settings back, ratios or byte
// counts as they were; it must be called on every exit path (defer it).
// If setting fails half-way, the previous settings are already back.
//
// Issue 14 (paper §5's producer, sustained): on a machine with much memory
// the page cache absorbs gigabytes before the kernel throttles a writer, so
// even the paper's 10 million messages are mostly a burst; a small
// threshold makes the page cache absorb as little as a small machine's
// would, and a run is then mostly the disk-bound sustained phase.
func LimitDirtyBytes(dir string, dirty, background int64) (restore func() error, err error) {
	if dirty <= 0 || background <= 0 || background > dirty {
		return nil, fmt.Errorf("machine: dirty bytes %d and background bytes %d: want 0 < background <= dirty", dirty, background)
	}
	old, err := ReadWriteback(dir)
	if err != nil {
		return nil, fmt.Errorf("machine: reading the writeback settings: %w", err)
	}
	restore = func() error { return SetWriteback(dir, old) }
	if err := SetWriteback(dir, Writeback{Bytes: dirty, BackgroundBytes: background}); err != nil {
		return nil, errors.Join(err, restore())
	}
	return restore, nil
}
