package wire

import (
	"fmt"
	"strconv"
	"strings"
)

// SegmentSuffix ends the name of every segment file.
const SegmentSuffix = ".kafka"

// SegmentNameDigits is the width of the zero-padded start offset in a
// segment file name, so that lexical order is numeric order.
const SegmentNameDigits = 20

// SegmentName returns the file name of the segment whose first message is
// at start: the offset in 20 zero-padded decimal digits, then ".kafka", as
// Kafka 0.7 (e.g. "00000000000000000000.kafka").
//
// Paper §3.1: a segment is named by the offset of its first message, the
// offsets an OFFSETS request answers; the name is part of the offset
// vocabulary the broker (broker/log), the admin document (broker/admin) and
// the tests of clients share, so it lives here rather than in broker/log,
// which clients must not import.
func SegmentName(start Offset) string {
	return fmt.Sprintf("%0*d%s", SegmentNameDigits, int64(start), SegmentSuffix)
}

// ParseSegmentName returns the start offset named by a segment file name,
// and false if name is not SegmentNameDigits decimal digits followed by
// SegmentSuffix.
func ParseSegmentName(name string) (Offset, bool) {
	digits, ok := strings.CutSuffix(name, SegmentSuffix)
	if !ok || len(digits) != SegmentNameDigits {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return Offset(n), true
}
