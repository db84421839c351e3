package machine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/netdb11/kafka/experiments/stats"
)

// Disk is what the disk probes measured, in MB/s (10^6 bytes), in the
// directory the brokers' logs live in.
type Disk struct {
	// BufferedWriteMBps is sequential writes of new blocks through the page
	// cache with one fdatasync at the end, timed to its return: `dd bs=1M
	// conv=fdatasync`, the way Kafka's log writes (page cache, then flush).
	BufferedWriteMBps float64 `json:"buffered_write_mb_per_sec"`
	// DirectWriteMBps is sequential writes of new blocks with O_DIRECT
	// (four 1 MiB writes in flight) and an fdatasync at the end: the rate
	// after the knee when the device's cache absorbed the start (a faster
	// first phase, DirectBurstMBps), else the whole write's rate.
	DirectWriteMBps float64 `json:"direct_write_mb_per_sec,omitempty"`
	// DirectBurstMBps is the rate before that knee; 0 without one.
	DirectBurstMBps float64 `json:"direct_burst_mb_per_sec,omitempty"`
	// ReadMBps is a cold sequential read (1 MiB reads) of the buffered
	// probe's file after dropping it from the page cache (DropCaches): the
	// better of two.
	ReadMBps float64 `json:"read_mb_per_sec,omitempty"`
	// ReadDrop says how the cache was emptied (DropAll or DropFiles) and
	// ReadResident how much of the file was still cached when the read
	// began (0 to 1; above 0 the read was not entirely cold).
	ReadDrop     string  `json:"read_drop,omitempty"`
	ReadResident float64 `json:"read_resident"`
	// Bytes is the size of each probe.
	Bytes int64 `json:"bytes"`
}

// WriteLimitMBps is the disk's sequential write limit for a writer that goes
// through the page cache, as Kafka's log does: the buffered probe (the
// O_DIRECT one when that failed). O_DIRECT with writes in flight can go
// faster than the kernel's writeback of dirty pages; the report gives both.
func (d Disk) WriteLimitMBps() float64 {
	if d.BufferedWriteMBps > 0 {
		return d.BufferedWriteMBps
	}
	return d.DirectWriteMBps
}

// MeasureDisk runs the write probes and then the cold read in dir, size bytes
// each, and removes its files. A probe that fails leaves its field zero and
// adds a note saying why; the others still run.
func MeasureDisk(ctx context.Context, dir string, size int64) (Disk, []string) {
	d := Disk{Bytes: size}
	var notes []string
	name, mbps, err := writeBuffered(ctx, dir, size)
	if name != "" {
		defer os.Remove(name)
	}
	if err != nil {
		notes = append(notes, "disk write probe (page cache, fdatasync) failed: "+err.Error())
	} else {
		d.BufferedWriteMBps = mbps
	}
	if sustained, burst, err := writeDirect(ctx, dir, size); err != nil {
		notes = append(notes, "disk write probe (O_DIRECT) failed: "+err.Error())
	} else {
		d.DirectWriteMBps, d.DirectBurstMBps = sustained, burst
	}
	if err == nil && name != "" {
		// The best of two cold reads, each after its own drop.
		for range 2 {
			how, res, mbps, err := readCold(name)
			if err != nil {
				notes = append(notes, "cold disk read probe failed: "+err.Error())
				break
			}
			if mbps > d.ReadMBps {
				d.ReadMBps, d.ReadDrop, d.ReadResident = mbps, how, res
			}
		}
		if d.ReadDrop == DropFiles {
			notes = append(notes, "not root: the cold reads dropped only their own files from the page cache (posix_fadvise DONTNEED), not the machine's whole cache (drop_caches needs root)")
		}
	}
	return d, notes
}

// blockStamp is the granularity at which the probes make their data unique,
// so that a device that deduplicates or compresses blocks cannot skip them.
const blockStamp = 4096

// stamp makes every 4 KiB block of buf unique: its first 8 bytes become a
// sequence number.
func stamp(buf []byte, seq *uint64) {
	for off := 0; off+8 <= len(buf); off += blockStamp {
		*seq++
		binary.LittleEndian.PutUint64(buf[off:], *seq)
	}
}

func randomBuffer(buf []byte) {
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	for i := 0; i+8 <= len(buf); i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], rng.Uint64())
	}
}

// writeBuffered writes size bytes of new blocks to a new file through the
// page cache, 1 MiB per write, then fdatasyncs it; the rate counts the
// fdatasync. It returns the file's name (to be removed by the caller).
func writeBuffered(ctx context.Context, dir string, size int64) (name string, mbps float64, err error) {
	f, err := os.CreateTemp(dir, "disk-probe-*")
	if err != nil {
		return "", 0, fmt.Errorf("machine: %w", err)
	}
	name = f.Name()
	buf := make([]byte, 1<<20)
	randomBuffer(buf)
	var seq uint64
	start := time.Now()
	var written int64
	for written < size && err == nil {
		if err = ctx.Err(); err != nil {
			break
		}
		stamp(buf, &seq)
		var n int
		n, err = f.Write(buf[:min(int64(len(buf)), size-written)])
		written += int64(n)
	}
	if err == nil {
		err = unix.Fdatasync(int(f.Fd()))
	}
	elapsed := time.Since(start).Seconds()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return name, 0, fmt.Errorf("machine: writing %s: %w", name, err)
	}
	return name, float64(size) / elapsed / 1e6, nil
}

// directWriters is how many O_DIRECT writes the probe keeps in flight.
const directWriters = 4

// writeDirect writes size bytes of new blocks with O_DIRECT, directWriters
// 1 MiB writes in flight, then fdatasyncs (which flushes the device's write
// cache). Progress is sampled every 50 ms; when the rate fell during the
// write (the device's cache filled: stats.FindKnee), sustained is the rate
// after the knee and burst the rate before it; otherwise sustained is the
// whole write's rate, fdatasync included, and burst 0.
func writeDirect(ctx context.Context, dir string, size int64) (sustained, burst float64, err error) {
	name := fmt.Sprintf("%s/disk-probe-direct-%d", dir, rand.Uint64())
	fd, err := unix.Open(name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_DIRECT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return 0, 0, fmt.Errorf("machine: O_DIRECT open in %s: %w", dir, err)
	}
	defer os.Remove(name)
	const chunk = 1 << 20
	chunks := (size + chunk - 1) / chunk
	var next, done atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, directWriters)
	start := time.Now()
	var pts []stats.Point
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				pts = append(pts, stats.Point{T: now.Sub(start).Seconds(), N: float64(done.Load())})
			}
		}
	}()
	for w := range directWriters {
		wg.Go(func() {
			buf := alignedBuffer(chunk, blockStamp)
			randomBuffer(buf)
			seq := uint64(w) << 48
			for {
				i := next.Add(1) - 1
				if i >= chunks || ctx.Err() != nil {
					errs[w] = ctx.Err()
					return
				}
				stamp(buf, &seq)
				n, err := unix.Pwrite(fd, buf, i*chunk)
				if err == nil && n != chunk {
					err = io.ErrShortWrite
				}
				if err != nil {
					errs[w] = err
					return
				}
				done.Add(chunk)
			}
		})
	}
	wg.Wait()
	serr := unix.Fdatasync(fd)
	end := time.Now()
	close(stop)
	<-sampled
	cerr := unix.Close(fd)
	if err := errors.Join(errors.Join(errs...), serr, cerr); err != nil {
		return 0, 0, fmt.Errorf("machine: O_DIRECT write: %w", err)
	}
	written := float64(chunks * chunk)
	pts = append(pts, stats.Point{T: end.Sub(start).Seconds(), N: written})
	s := stats.FindKnee(pts, stats.KneeOptions{})
	if s.Knee {
		return s.After / 1e6, s.Before / 1e6, nil
	}
	return written / end.Sub(start).Seconds() / 1e6, 0, nil
}

// alignedBuffer returns n bytes starting at a multiple of align, as O_DIRECT
// requires.
func alignedBuffer(n, align int) []byte {
	b := make([]byte, n+align)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&b[0])) % uintptr(align)); r != 0 {
		off = align - r
	}
	return b[off : off+n]
}

// readCold drops name from the page cache (DropCaches) and reads it
// sequentially with 1 MiB reads. It returns how the cache was dropped, the
// share of the file still resident when the read began, and the rate.
func readCold(name string) (how string, resident, mbps float64, err error) {
	how, err = DropCaches(name)
	if err != nil {
		return how, 0, 0, err
	}
	res, total, err := Resident(name)
	if err != nil {
		return how, 0, 0, err
	}
	if total > 0 {
		resident = float64(res) / float64(total)
	}
	f, err := os.Open(name)
	if err != nil {
		return how, resident, 0, fmt.Errorf("machine: %w", err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	start := time.Now()
	n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf)
	elapsed := time.Since(start).Seconds()
	if err != nil {
		return how, resident, 0, fmt.Errorf("machine: reading %s: %w", name, err)
	}
	if n == 0 || elapsed <= 0 {
		return how, resident, 0, fmt.Errorf("machine: read %d bytes of %s", n, name)
	}
	return how, resident, float64(n) / elapsed / 1e6, nil
}
