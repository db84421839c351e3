package wire

import (
	"bytes"
	"compress/gzip"
	"io"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time of the calling thread. On a shared
// machine a benchmark's wall time depends on how much of a core it got;
// its thread's CPU time much less, so the benchmarks below report both
// (cpu-ns/op, and cpu-MB/s of output per CPU-second).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// cpuMeter reports a benchmark's CPU time per op from its own thread,
// which it locks for the benchmark's duration.
type cpuMeter struct {
	b     *testing.B
	start time.Duration
}

func startCPU(b *testing.B) *cpuMeter {
	runtime.LockOSThread()
	return &cpuMeter{b: b, start: threadCPU()}
}

// stop reports cpu-ns/op and, for bytes per op, cpu-MB/s.
func (m *cpuMeter) stop(bytesPerOp int) {
	cpu := threadCPU() - m.start
	runtime.UnlockOSThread()
	if m.b.N == 0 || cpu <= 0 {
		return
	}
	m.b.ReportMetric(float64(cpu.Nanoseconds())/float64(m.b.N), "cpu-ns/op")
	if bytesPerOp > 0 {
		m.b.ReportMetric(float64(bytesPerOp)*float64(m.b.N)/cpu.Seconds()/1e6, "cpu-MB/s")
	}
}

// gzipBatches returns the gzip payloads of 100 batches of 50 log-like
// 200-byte messages (as a producer with compression.codec=1 writes them)
// and their total expanded size.
func gzipBatches(b *testing.B) ([][]byte, int) {
	lines := benchLogLines(5000, 200)
	var ps [][]byte
	total := 0
	for i := 0; i < len(lines); i += 50 {
		set := NewMessageSet(lines[i : i+50]...)
		p, err := Compress(CodecGzip, set)
		if err != nil {
			b.Fatal(err)
		}
		ps = append(ps, p)
		total += len(set)
	}
	return ps, total
}

// BenchmarkGunzipLog50 expands gzip batches of 50 log-like messages into a
// reused buffer with the repository's inflater (gzip's CRC-32 included);
// MB/s counts output bytes. BenchmarkGunzipLog50Stdlib does the same with
// compress/gzip (a reused Reader), the reference.
func BenchmarkGunzipLog50(b *testing.B) {
	ps, total := gzipBatches(b)
	b.SetBytes(int64(total))
	b.ReportAllocs()
	buf := make([]byte, 0, 64<<10)
	m := startCPU(b)
	for b.Loop() {
		for _, p := range ps {
			var err error
			if _, err = appendGunzip(buf[:0], p, 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	}
	m.stop(total)
	b.ReportMetric(float64(5000*b.N)/b.Elapsed().Seconds(), "msg/s")
}

func BenchmarkGunzipLog50Stdlib(b *testing.B) {
	ps, total := gzipBatches(b)
	b.SetBytes(int64(total))
	b.ReportAllocs()
	buf := bytes.NewBuffer(make([]byte, 0, 64<<10))
	var r *gzip.Reader
	rd := bytes.NewReader(nil)
	m := startCPU(b)
	for b.Loop() {
		for _, p := range ps {
			rd.Reset(p)
			var err error
			if r == nil {
				r, err = gzip.NewReader(rd)
			} else {
				err = r.Reset(rd)
			}
			if err != nil {
				b.Fatal(err)
			}
			buf.Reset()
			if _, err := io.Copy(buf, r); err != nil {
				b.Fatal(err)
			}
		}
	}
	m.stop(total)
	b.ReportMetric(float64(5000*b.N)/b.Elapsed().Seconds(), "msg/s")
}

// BenchmarkInflateTables reads and builds the dynamic Huffman tables of
// the same batches' blocks (one per batch), without decoding their
// symbols: the part of BenchmarkGunzipLog50 that does not depend on the
// output's size.
func BenchmarkInflateTables(b *testing.B) {
	ps, _ := gzipBatches(b)
	f := newInflater()
	m := startCPU(b)
	for b.Loop() {
		for _, p := range ps {
			f.in, f.pos, f.b, f.n = p, 10, 0, 0
			if hdr, ok := f.take(3); !ok || hdr>>1 != 2 {
				b.Fatal("not a dynamic block")
			}
			if err := f.readTables(); err != nil {
				b.Fatal(err)
			}
		}
	}
	m.stop(0)
}
