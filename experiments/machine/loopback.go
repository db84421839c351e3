package machine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Stream is the shape of one TCP connection over loopback: how the sender
// writes and how the receiver reads, so that a probe can move bytes the way
// one of Kafka's clients does (issue 14: the limit of one stream, the way
// the clients use it).
type Stream struct {
	// WriteBytes is the size of each write (default 1 MiB).
	WriteBytes int
	// ReadBytes is the receiver's buffer (default 1 MiB).
	ReadBytes int
	// SendBuffer and ReceiveBuffer set SO_SNDBUF and SO_RCVBUF (0: the
	// kernel's autotuning).
	SendBuffer, ReceiveBuffer int
	// Nagle leaves Nagle's algorithm on (Go turns it off by default), as
	// Kafka 0.7's producer does.
	Nagle bool
	// SendfileDir, when set, makes the sender send a file of the page cache
	// with sendfile(2), WriteBytes per call, as the broker answers a fetch;
	// the file is written there and removed afterwards.
	SendfileDir string
}

// ProducerStream is the shape of kafka-producer-perf-test's connection to
// the broker: PRODUCE requests of requestBytes written with Nagle's
// algorithm on and a 100 KiB send buffer (0.7's buffer.size), read by the
// broker with its 100 KiB receive buffer (socket.receive.buffer).
func ProducerStream(requestBytes int) Stream {
	return Stream{WriteBytes: requestBytes, ReadBytes: 64 << 10, SendBuffer: 100 << 10, ReceiveBuffer: 100 << 10, Nagle: true}
}

// FetchStream is the shape of a fetch: the broker sends log segments from
// the page cache with sendfile, fetchBytes per response, through its 100 KiB
// send buffer (socket.send.buffer); the consumer reads them with the
// kernel's autotuned receive buffer into a buffer of the fetch size.
func FetchStream(dir string, fetchBytes int) Stream {
	return Stream{WriteBytes: fetchBytes, ReadBytes: fetchBytes, SendBuffer: 100 << 10, SendfileDir: dir}
}

// sendfileFileBytes is the size of the cached file a sendfile stream sends
// over and over.
const sendfileFileBytes = 64 << 20

// LoopbackStream measures TCP bandwidth over 127.0.0.1 in MB/s (10^6
// bytes): one connection of the given shape moving size bytes, timed from
// the first write until the receiver has read the last byte.
func LoopbackStream(ctx context.Context, size int64, s Stream) (float64, error) {
	if s.WriteBytes <= 0 {
		s.WriteBytes = 1 << 20
	}
	if s.ReadBytes <= 0 {
		s.ReadBytes = 1 << 20
	}
	var src *os.File
	if s.SendfileDir != "" {
		f, err := cachedFile(s.SendfileDir, sendfileFileBytes)
		if err != nil {
			return 0, err
		}
		defer os.Remove(f.Name())
		defer f.Close()
		src = f
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("machine: %w", err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	var recvErr error
	var received int64
	var done time.Time
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			recvErr = err
			return
		}
		defer c.Close()
		if s.ReceiveBuffer > 0 {
			if err := c.(*net.TCPConn).SetReadBuffer(s.ReceiveBuffer); err != nil {
				recvErr = err
				return
			}
		}
		buf := make([]byte, s.ReadBytes)
		for {
			n, err := c.Read(buf)
			received += int64(n)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				recvErr = err
				return
			}
		}
		done = time.Now()
	}()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		ln.Close()
		wg.Wait()
		return 0, fmt.Errorf("machine: %w", err)
	}
	c := conn.(*net.TCPConn)
	var setErr error
	if s.SendBuffer > 0 {
		setErr = c.SetWriteBuffer(s.SendBuffer)
	}
	if s.Nagle && setErr == nil {
		setErr = c.SetNoDelay(false)
	}
	start := time.Now()
	var sent int64
	sendErr := setErr
	if src != nil {
		for sent < size && sendErr == nil {
			n := min(int64(s.WriteBytes), size-sent)
			off := sent % sendfileFileBytes
			n = min(n, sendfileFileBytes-off)
			var k int64
			if _, sendErr = src.Seek(off, io.SeekStart); sendErr == nil {
				// TCPConn.ReadFrom of a limited *os.File is sendfile(2).
				k, sendErr = c.ReadFrom(&io.LimitedReader{R: src, N: n})
			}
			sent += k
			if k == 0 && sendErr == nil {
				sendErr = io.ErrUnexpectedEOF
			}
		}
	} else {
		buf := make([]byte, s.WriteBytes)
		for sent < size && sendErr == nil {
			var n int
			n, sendErr = c.Write(buf[:min(int64(len(buf)), size-sent)])
			sent += int64(n)
		}
	}
	cerr := c.Close()
	wg.Wait()
	elapsed := done.Sub(start).Seconds()
	if err := errors.Join(sendErr, cerr, recvErr); err != nil {
		return 0, fmt.Errorf("machine: loopback transfer: %w", err)
	}
	if received != size || elapsed <= 0 {
		return 0, fmt.Errorf("machine: loopback transfer moved %d of %d bytes", received, size)
	}
	return float64(size) / elapsed / 1e6, nil
}

// cachedFile writes a file of n bytes into dir and leaves it in the page
// cache, open for reading.
func cachedFile(dir string, n int) (*os.File, error) {
	f, err := os.CreateTemp(dir, "loopback-*")
	if err != nil {
		return nil, fmt.Errorf("machine: %w", err)
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte('a' + i%26)
	}
	for written := 0; written < n; written += len(buf) {
		if _, err := f.Write(buf[:min(len(buf), n-written)]); err != nil {
			return nil, errors.Join(fmt.Errorf("machine: %w", err), f.Close(), os.Remove(f.Name()))
		}
	}
	return f, nil
}

// Loopback measures TCP bandwidth over 127.0.0.1 in MB/s (10^6 bytes): one
// connection, 1 MiB writes, the kernel's autotuned buffers, size bytes in all.
func Loopback(ctx context.Context, size int64) (float64, error) {
	return LoopbackStream(ctx, size, Stream{})
}
