package server

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// copyBufSize is the size of the pooled buffers of the copying fetch path.
const copyBufSize = 256 << 10

// copyBufs holds the buffers of the copying fetch path (fetch.use.sendfile
// = false), shared by all connections.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// responder writes the responses of one connection: small headers built in
// user space, and file regions sent either with sendfile (the normal path)
// or by copying (the ablation path, or a connection without a socket).
//
// Headers are gathered in hdr and go out just before the next region, with
// MSG_MORE so that header and data share packets, or at flush.
type responder struct {
	nc  net.Conn
	raw syscall.RawConn // nil when nc is not a socket (tests with net.Pipe)
	// zeroCopy selects sendfile; false copies through a pooled buffer.
	zeroCopy bool
	hdr      []byte
}

func newResponder(nc net.Conn, useSendfile bool) *responder {
	r := &responder{nc: nc, hdr: make([]byte, 0, 64)}
	if sc, ok := nc.(syscall.Conn); ok && sendfileSupported {
		if raw, err := sc.SyscallConn(); err == nil {
			r.raw = raw
		}
	}
	r.zeroCopy = useSendfile && r.raw != nil
	return r
}

// flush writes the pending header bytes.
func (r *responder) flush() error {
	if len(r.hdr) == 0 {
		return nil
	}
	_, err := r.nc.Write(r.hdr)
	r.hdr = r.hdr[:0]
	return err
}

// region sends the pending header bytes and then n bytes of f from file
// position pos.
func (r *responder) region(f *os.File, pos, n int64) error {
	if n == 0 {
		return nil
	}
	if !r.zeroCopy {
		return r.copyRegion(f, pos, n)
	}
	if len(r.hdr) > 0 {
		if err := writeMore(r.raw, r.hdr); err != nil {
			return err
		}
		r.hdr = r.hdr[:0]
	}
	_, err := sendFile(r.raw, f, pos, n)
	return err
}

// copyRegion is the user-space fetch path: pread into a pooled buffer, then
// write. It exists only for the sendfile ablation (fetch.use.sendfile=false)
// and for connections that are not sockets; like sendFile it reads at
// explicit positions and never moves the file's position.
func (r *responder) copyRegion(f *os.File, pos, n int64) error {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	if len(r.hdr) > len(buf)/2 {
		if err := r.flush(); err != nil {
			return err
		}
	}
	k := copy(buf, r.hdr)
	r.hdr = r.hdr[:0]
	for n > 0 {
		want := int(min(int64(len(buf)-k), n))
		m, err := f.ReadAt(buf[k:k+want], pos)
		if m < want {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("reading %s at %d: %w", f.Name(), pos, err)
		}
		if _, err := r.nc.Write(buf[:k+m]); err != nil {
			return err
		}
		pos += int64(m)
		n -= int64(m)
		k = 0
	}
	return nil
}
