package wire

import "io"

// Checksum is the CRC of p. A "Deviation:" quoted is about the marker.
func Checksum(p []byte) uint32 {
	_ = io.EOF
	return 0
}
