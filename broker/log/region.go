package log

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// Region is a byte range of one segment file, as returned by Log.Read: the
// bytes [Pos, Pos+Len) of File, ready to be sent with sendfile. It may end in
// the middle of a message (Kafka 0.7 does not cut fetches at message
// boundaries; the client drops the partial last message).
//
// A Region holds a reference that keeps its file open even if retention
// deletes the segment meanwhile. Call Release exactly when done with it
// (calling it more than once is harmless). A Region with Len 0 may have a nil
// File and needs no Release, though calling it is harmless too.
type Region struct {
	// File is the segment file. Use it only with explicit positions (pread,
	// sendfile with an offset); never Seek, Read or Write it, as its file
	// position is shared.
	File *os.File
	// Pos is the position in File of the first byte.
	Pos int64
	// Len is the number of bytes.
	Len int64

	ref *regionRef
}

// regionRef makes Release idempotent.
type regionRef struct {
	seg      *segment
	released atomic.Bool
}

// Release gives the Region's reference back. After the last reference to a
// deleted segment is released, its file is closed.
func (r Region) Release() {
	if r.ref != nil && r.ref.released.CompareAndSwap(false, true) {
		if err := r.ref.seg.release(); err != nil {
			r.ref.seg.logger.Error("releasing a region", "file", r.ref.seg.path, "err", err)
		}
	}
}

// AppendTo appends the Region's bytes to dst (with pread, not touching the
// file position) and returns the extended slice. It is for readers that want
// the bytes in memory; the broker sends regions with sendfile instead.
func (r Region) AppendTo(dst []byte) ([]byte, error) {
	if r.Len == 0 {
		return dst, nil
	}
	if r.File == nil {
		return dst, fmt.Errorf("log: region of %d bytes has no file", r.Len)
	}
	n := len(dst)
	if free := cap(dst) - n; int64(free) < r.Len {
		grown := make([]byte, n, int64(n)+r.Len)
		copy(grown, dst)
		dst = grown
	}
	dst = dst[:n+int(r.Len)]
	if _, err := r.File.ReadAt(dst[n:], r.Pos); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return dst[:n], fmt.Errorf("log: read %d bytes at %d of %s: %w", r.Len, r.Pos, r.File.Name(), err)
	}
	return dst, nil
}
