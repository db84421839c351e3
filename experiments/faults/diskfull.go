package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Disk nemeses (issue 23).
const (
	// DiskFullLeader fills the file system of the leader of partition 0
	// (its log.dir is a tmpfs with a size limit, mounted by the harness)
	// with a file of the harness's, so that every append and replica fetch
	// it makes fails with ENOSPC; healed by deleting the file.
	DiskFullLeader = "disk-full-leader"
	// DiskFullFollower is DiskFullLeader on a follower of partition 0.
	DiskFullFollower = "disk-full-follower"
)

// diskNemeses are the nemeses that need the brokers' log.dirs on a file
// system of their own (diskSize each).
var diskNemeses = []string{DiskFullLeader, DiskFullFollower}

// diskSize is the size limit of each broker's tmpfs: several times what a
// broker holds at the end of a compound trial (3 partitions at about
// 0.5 MB/s each).
const diskSize = "384m"

// fillName is the file that fills a broker's disk, at the root of its
// log.dir (the log manager ignores files there).
const fillName = "disk-full.fill"

// ErrSkipped wraps why a trial could not inject its nemesis here (no root,
// no tmpfs): the trial is not run and counts as a harness error, never as
// passed.
var ErrSkipped = errors.New("faults: trial skipped: the nemesis cannot be injected here")

// needsDisks reports whether cfg's trial strikes with a disk nemesis: its
// own, or one of its compound schedule's.
func needsDisks(cfg TrialConfig) bool { return strikesWith(cfg, diskNemeses) }

// mountDisks mounts a tmpfs of diskSize on every broker's log.dir under
// work (before the brokers start) and returns what unmounts them. Without
// root or tmpfs it fails with ErrSkipped.
func mountDisks(ctx context.Context, work string, brokers int) (unmount func() error, err error) {
	var mounted []string
	unmount = func() error {
		var errs []error
		for _, d := range mounted {
			if out, err := exec.Command("umount", d).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("faults: umount %s: %w: %s", d, err, out))
			}
		}
		return errors.Join(errs...)
	}
	if os.Geteuid() != 0 {
		return unmount, fmt.Errorf("%w: mounting a tmpfs needs root", ErrSkipped)
	}
	for b := 1; b <= brokers; b++ {
		dir := filepath.Join(work, brokerHost(b), "logs") // Cluster.BrokerDir
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return unmount, err
		}
		out, err := exec.CommandContext(ctx, "mount", "-t", "tmpfs", "-o", "size="+diskSize, "faults-disk", dir).CombinedOutput()
		if err != nil {
			return unmount, errors.Join(fmt.Errorf("%w: mount -t tmpfs on %s: %v: %s", ErrSkipped, dir, err, out), unmount())
		}
		mounted = append(mounted, dir)
	}
	return unmount, nil
}

// diskFull fills broker f.Broker's file system, and its heal frees it.
func (t *trial) diskFull(f Fault) (heal func(context.Context) error, err error) {
	path := filepath.Join(t.cl.BrokerDir(f.Broker), fillName)
	heal = func(context.Context) error {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(t.cl.BrokerDir(f.Broker), &st); err != nil {
		return heal, err
	}
	if st.Type != 0x01021994 { // TMPFS_MAGIC
		return heal, fmt.Errorf("%w: broker%d's log.dir is not the harness's tmpfs", ErrSkipped, f.Broker)
	}
	n, err := fill(path)
	if err != nil {
		return heal, err
	}
	t.note("%s: filled broker%d's disk with %d MB at %v", f, f.Broker, n>>20, time.Since(t.start).Round(time.Millisecond))
	return heal, nil
}

// fill writes path until the file system is full and returns how many
// bytes it wrote.
func fill(path string) (int64, error) {
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, size := range []int{1 << 20, 4 << 10, 1} {
		buf := make([]byte, size)
		for {
			m, err := fh.Write(buf)
			n += int64(m)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				fh.Close()
				return n, err
			}
		}
	}
	return n, fh.Close()
}
