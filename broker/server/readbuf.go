package server

import "io"

// readBuffer is a connection's read buffer. Each read(2) takes as much as
// the buffer has room for, so one call picks up many small pipelined
// requests, and frames that fit are handled in place, without a copy.
//
// It starts small, so that idle connections cost little, and grows once to
// maxSize when a frame larger than it arrives (a batch of messages): the
// connection then reads several such frames at a time, and the PRODUCE
// requests among them to one partition are appended together.
type readBuffer struct {
	src  io.Reader
	buf  []byte
	r, w int // buf[r:w] holds bytes read and not yet consumed
}

func newReadBuffer(src io.Reader, size int) *readBuffer {
	return &readBuffer{src: src, buf: make([]byte, size)}
}

// buffered returns the bytes read and not yet consumed; they stay valid
// until the next fill, grow or read.
func (b *readBuffer) buffered() []byte { return b.buf[b.r:b.w] }

// size returns the buffer's capacity.
func (b *readBuffer) size() int { return len(b.buf) }

// discard consumes n buffered bytes.
func (b *readBuffer) discard(n int) {
	b.r += n
	if b.r == b.w {
		b.r, b.w = 0, 0
	}
}

// maxEmptyReads bounds reads that return nothing and no error (which a
// net.Conn never does), as bufio does.
const maxEmptyReads = 100

// fill reads until at least n bytes (n <= size) are buffered. Its error is
// the reader's: io.EOF when the reader ended.
func (b *readBuffer) fill(n int) error {
	if len(b.buf)-b.r < n {
		b.w = copy(b.buf, b.buf[b.r:b.w])
		b.r = 0
	}
	for empty := 0; b.w-b.r < n; {
		m, err := b.src.Read(b.buf[b.w:])
		b.w += m
		if err != nil {
			if b.w-b.r >= n {
				return nil // the error comes back on the next read
			}
			return err
		}
		if m == 0 {
			if empty++; empty == maxEmptyReads {
				return io.ErrNoProgress
			}
		}
	}
	return nil
}

// grow enlarges the buffer to size bytes, keeping the buffered ones.
func (b *readBuffer) grow(size int) {
	if size <= len(b.buf) {
		return
	}
	buf := make([]byte, size)
	b.w = copy(buf, b.buf[b.r:b.w])
	b.r = 0
	b.buf = buf
}

// read fills p as io.ReadFull does: the buffered bytes first, then straight
// from the reader, without going through the buffer.
func (b *readBuffer) read(p []byte) (int, error) {
	n := copy(p, b.buffered())
	b.discard(n)
	if n == len(p) {
		return n, nil
	}
	m, err := io.ReadFull(b.src, p[n:])
	if err == io.EOF && n > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n + m, err
}
