package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// ErrMalformedResponse is wrapped by the error of a response frame whose
// size field is out of bounds, or that bytes follow although no other
// response was asked for: the peer is not speaking the protocol, and the
// connection is of no further use.
var ErrMalformedResponse = errors.New("kafka: malformed response")

// Conn is what a round trip needs of a connection (a net.Conn has it).
type Conn interface {
	io.ReadWriter
	SetDeadline(t time.Time) error
}

// errorCodeLen is the width of the int16 error code after a response's
// size: the smallest size a response has.
const errorCodeLen = 2

// minReadAhead is the smallest buffer of a ResponseReader's round trips:
// one read(2) takes a response header and a small body together.
const minReadAhead = 64 << 10

// ResponseReader reads response frames (doc.go: size, error code, body)
// into one buffer it reuses: the body a call returns aliases that buffer and
// is valid until the next call. The zero value is ready to use; a
// ResponseReader is not safe for concurrent use.
//
// Every call takes max, the bound on the frame's size field (the bytes
// after it: error code and body). The size field is checked as soon as it
// is read: a size below 2 or above max is an error wrapping
// ErrMalformedResponse, and nothing is allocated for it. A frame cut short
// ends in io.ErrUnexpectedEOF; a connection closed before the frame begins,
// in io.EOF.
type ResponseReader struct {
	size [SizeLen]byte
	buf  []byte // error code and body
}

// ReadResponse reads one response frame from r, and nothing after it (more
// may be in flight on a pipelined connection).
func (rr *ResponseReader) ReadResponse(r io.Reader, max int) (ErrorCode, []byte, error) {
	if _, err := io.ReadFull(r, rr.size[:]); err != nil {
		return 0, nil, err
	}
	size, err := frameSize(rr.size[:], max)
	if err != nil {
		return 0, nil, err
	}
	if cap(rr.buf) < size {
		rr.buf = make([]byte, size)
	}
	rest := rr.buf[:size]
	if _, err := io.ReadFull(r, rest); err != nil {
		return 0, nil, unexpected(err)
	}
	return ErrorCode(binary.BigEndian.Uint16(rest)), rest[errorCodeLen:], nil
}

// ReadResponse reads one response frame from r into a buffer of its own,
// for a caller that keeps the body (ResponseReader.ReadResponse).
func ReadResponse(r io.Reader, max int) (ErrorCode, []byte, error) {
	var rr ResponseReader
	return rr.ReadResponse(r, max)
}

// RoundTrip sets c's deadline (for the write and the read; the zero time:
// none), writes the request frame and reads its response, as Exchange.
func (rr *ResponseReader) RoundTrip(c Conn, frame []byte, deadline time.Time, max int) (ErrorCode, []byte, error) {
	if err := c.SetDeadline(deadline); err != nil {
		return 0, nil, err
	}
	return rr.Exchange(c, frame, max)
}

// Exchange writes a request frame to rw and reads its response, under
// whatever deadline the caller has set. The request must be the only one
// in flight on rw: Exchange reads as much as arrives, up to its buffer, so
// that a small response takes one read, and a byte beyond the response is
// an error wrapping ErrMalformedResponse.
func (rr *ResponseReader) Exchange(rw io.ReadWriter, frame []byte, max int) (ErrorCode, []byte, error) {
	if _, err := rw.Write(frame); err != nil {
		return 0, nil, err
	}
	if cap(rr.buf) < minReadAhead {
		rr.buf = make([]byte, minReadAhead)
	}
	buf := rr.buf[:cap(rr.buf)]
	got, err := io.ReadAtLeast(rw, buf, SizeLen)
	if err != nil {
		return 0, nil, err
	}
	size, err := frameSize(buf, max)
	if err != nil {
		return 0, nil, err
	}
	total := SizeLen + size
	if got > total {
		return 0, nil, fmt.Errorf("%w: %d bytes after a response of %d", ErrMalformedResponse, got-total, total)
	}
	if total > len(buf) {
		nb := make([]byte, total)
		copy(nb, buf[:got])
		rr.buf, buf = nb, nb
	}
	if _, err := io.ReadFull(rw, buf[got:total]); err != nil {
		return 0, nil, unexpected(err)
	}
	return ErrorCode(binary.BigEndian.Uint16(buf[SizeLen:])), buf[ResponseHeaderLen:total], nil
}

// frameSize returns the size field at the start of hdr, checked against
// [errorCodeLen, max].
func frameSize(hdr []byte, max int) (int, error) {
	size := int64(int32(binary.BigEndian.Uint32(hdr)))
	if size < errorCodeLen || size > int64(max) {
		return 0, fmt.Errorf("%w: response size %d is not in 2..%d", ErrMalformedResponse, size, max)
	}
	return int(size), nil
}

// unexpected turns the io.EOF of a frame's later part into
// io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
