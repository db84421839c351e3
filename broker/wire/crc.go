package wire

import (
	"encoding/binary"
	"hash/crc32"
)

// Checksum computes the CRC-32 (IEEE) of a payload, as stored in a message.
//
// hash/crc32 folds a buffer of 64 bytes or more with carry-less
// multiplication 16 bytes at a time, then takes the last len%16 bytes one
// at a time, a chain of dependent table lookups. For a 200-byte message that
// tail (8 bytes) cost as much as the other 192 (profiles of the consumer and
// the broker, paper/profiles.md): here the tail's whole 8-byte words go
// through one slicing-by-8 step, eight independent lookups.
func Checksum(payload []byte) uint32 {
	n := len(payload)
	if n < 64 || n&15 < 8 {
		return crc32.ChecksumIEEE(payload)
	}
	body := n &^ 15
	crc := ^crc32.ChecksumIEEE(payload[:body])
	p := payload[body:]
	crc ^= binary.LittleEndian.Uint32(p)
	crc = crcTable8[0][p[7]] ^ crcTable8[1][p[6]] ^ crcTable8[2][p[5]] ^ crcTable8[3][p[4]] ^
		crcTable8[4][crc>>24] ^ crcTable8[5][(crc>>16)&0xff] ^
		crcTable8[6][(crc>>8)&0xff] ^ crcTable8[7][crc&0xff]
	for _, v := range p[8:] {
		crc = crcTable8[0][byte(crc)^v] ^ crc>>8
	}
	return ^crc
}

// crcTable8 is the slicing-by-8 table of CRC-32 (IEEE): crcTable8[k][b] is
// the CRC register after byte b followed by k zero bytes.
var crcTable8 = func() (t [8][256]uint32) {
	t[0] = *crc32.IEEETable
	for i := range 256 {
		crc := t[0][i]
		for k := 1; k < 8; k++ {
			crc = t[0][crc&0xff] ^ crc>>8
			t[k][i] = crc
		}
	}
	return t
}()
