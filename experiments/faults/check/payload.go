package check

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// payloadPrefix starts every payload the harness's producers write.
const payloadPrefix = "faults "

// Payload returns a message body naming id, padded with '.' to size bytes
// (or longer when size is too small to hold the name).
func Payload(id ID, size int) []byte {
	b := fmt.Appendf(nil, "%sp%d s%d ", payloadPrefix, id.Producer, id.Seq)
	for len(b) < size {
		b = append(b, '.')
	}
	return b
}

// ParsePayload returns the message a payload names, or false when it names
// none (it was not written by Payload, or was damaged).
func ParsePayload(b []byte) (ID, bool) {
	s, ok := strings.CutPrefix(string(b), payloadPrefix)
	if !ok {
		return ID{}, false
	}
	f := strings.SplitN(s, " ", 3)
	if len(f) != 3 || !strings.HasPrefix(f[0], "p") || !strings.HasPrefix(f[1], "s") || strings.Trim(f[2], ".") != "" {
		return ID{}, false
	}
	p, err1 := strconv.Atoi(f[0][1:])
	q, err2 := strconv.ParseInt(f[1][1:], 10, 64)
	if err1 != nil || err2 != nil || p <= 0 || q <= 0 {
		return ID{}, false
	}
	return ID{p, q}, true
}

// ReadEvent is the event recording that reader read payload at offset.
func ReadEvent(reader string, tp TP, offset int64, payload []byte) Event {
	e := Event{Type: TypeRead, Reader: reader, Topic: tp.Topic, Partition: tp.Partition, Offset: offset}
	if id, ok := ParsePayload(payload); ok {
		e.Producer, e.Seq = id.Producer, id.Seq
	} else {
		sum := sha256.Sum256(payload)
		e.Raw = hex.EncodeToString(sum[:8])
	}
	return e
}
