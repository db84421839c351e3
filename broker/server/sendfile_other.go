//go:build !linux

package server

import (
	"errors"
	"os"
	"syscall"
)

// sendFile is only implemented on Linux; elsewhere the broker copies.
func sendFile(rc syscall.RawConn, f *os.File, off, n int64) (int64, error) {
	return 0, errors.ErrUnsupported
}

// writeMore is only implemented on Linux.
func writeMore(rc syscall.RawConn, p []byte) error { return errors.ErrUnsupported }

// sendfileSupported reports whether this platform has sendFile.
const sendfileSupported = false
