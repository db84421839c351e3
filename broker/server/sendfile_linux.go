package server

import (
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxSendfileChunk bounds one sendfile(2) call (Linux moves at most
// 0x7ffff000 bytes per call anyway).
const maxSendfileChunk = 1 << 30

// sendFile sends n bytes of f, starting at file position off, to the socket
// behind rc with sendfile(2), and returns how many it sent.
//
// Paper §3.1: Kafka uses the sendfile API to deliver the bytes of a log
// segment file from a broker to a consumer: the bytes go from the page cache
// to the socket inside the kernel and never through a user-space buffer.
//
// The position is an explicit offset kept in a local variable and passed to
// every call, so the file's own position is never read or moved and any
// number of fetches may send from the same *os.File at once. When the socket
// buffer is full (EAGAIN) it waits for the socket to become writable through
// the runtime's poller (rc.Write), which honours the connection's write
// deadline. It loops until n bytes are sent; a file shorter than off+n
// is an error (io.ErrUnexpectedEOF), as the caller has already announced n
// bytes to the client.
func sendFile(rc syscall.RawConn, f *os.File, off, n int64) (int64, error) {
	fc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var sent int64
	var sendErr error
	ctlErr := fc.Control(func(ffd uintptr) {
		pos := off
		writeErr := rc.Write(func(sfd uintptr) bool {
			for sent < n {
				w, err := unix.Sendfile(int(sfd), int(ffd), &pos, int(min(n-sent, maxSendfileChunk)))
				if w > 0 {
					sent += int64(w)
				}
				switch {
				case err == unix.EAGAIN:
					return false // wait until the socket is writable
				case err == unix.EINTR:
					continue
				case err != nil:
					sendErr = os.NewSyscallError("sendfile", err)
					return true
				case w == 0:
					sendErr = fmt.Errorf("sendfile %s at %d: %w", f.Name(), pos, io.ErrUnexpectedEOF)
					return true
				}
			}
			return true
		})
		if sendErr == nil {
			sendErr = writeErr
		}
	})
	if sendErr == nil {
		sendErr = ctlErr
	}
	return sent, sendErr
}

// writeMore writes p to the socket behind rc with MSG_MORE, telling the
// kernel that more bytes (the sendfile that follows) belong to the same
// segment, so a response header does not leave as a packet of its own.
func writeMore(rc syscall.RawConn, p []byte) error {
	var sendErr error
	writeErr := rc.Write(func(fd uintptr) bool {
		for len(p) > 0 {
			n, err := unix.SendmsgN(int(fd), p, nil, nil, unix.MSG_MORE)
			if n > 0 {
				p = p[n:]
			}
			switch {
			case err == unix.EAGAIN:
				return false
			case err == unix.EINTR:
				continue
			case err != nil:
				sendErr = os.NewSyscallError("sendmsg", err)
				return true
			}
		}
		return true
	})
	if sendErr == nil {
		sendErr = writeErr
	}
	return sendErr
}

// sendfileSupported reports whether this platform has sendFile.
const sendfileSupported = true
