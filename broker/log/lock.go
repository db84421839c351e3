package log

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// LockFile is the file in log.dir that a Manager holds an exclusive flock(2)
// on while it is open, so that two brokers never share one log.dir. It
// holds the holder's "pid=<pid> host=<hostname>", for the error the second
// one reports. (Later Kafka versions lock log.dir the same way; 0.7 does
// not.)
const LockFile = ".lock"

// lockDir checks that dir is writable (it creates and removes a probe file)
// and takes the exclusive lock on its LockFile, writing the holder into it.
// The lock lasts until the returned file is closed. If another process holds
// the lock the error wraps ErrLocked and names the holder.
//
// Deviation: Kafka 0.7 neither locks log.dir nor checks it is writable (a
// broker on a read-only one starts and fails every produce); later Kafka
// versions lock it the same way.
func lockDir(dir string) (*os.File, error) {
	probe, err := os.CreateTemp(dir, ".writable-*")
	if err != nil {
		return nil, fmt.Errorf("%w: log.dir %s: %w", ErrNotWritable, dir, err)
	}
	if err := errors.Join(probe.Close(), os.Remove(probe.Name())); err != nil {
		return nil, fmt.Errorf("%w: log.dir %s: %w", ErrNotWritable, dir, err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: log.dir %s: %w", ErrNotWritable, dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, rerr := io.ReadAll(io.LimitReader(f, 256))
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			who := strings.TrimSpace(string(holder))
			if rerr != nil || who == "" {
				who = "another process"
			}
			return nil, fmt.Errorf("%w: %s is held by %s", ErrLocked, path, who)
		}
		return nil, fmt.Errorf("log: lock %s: %w", path, err)
	}
	host, _ := os.Hostname()
	holder := fmt.Sprintf("pid=%d host=%s\n", os.Getpid(), host)
	// The holder is for error messages only: a full disk must not stop
	// the broker from starting (appends then wait for space).
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(holder), 0)
	}
	return f, nil
}
