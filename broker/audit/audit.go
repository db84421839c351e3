package audit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// AuditTopic is the default topic of the monitoring events.
const AuditTopic = "kafka-audit"

// Layout constants; doc.go draws them.
const (
	magicLen   = 2
	versionLen = 1
	int64Len   = 8
	lenLen     = 1

	// Version is the only version of both formats.
	Version = 1
	// MaxHost is the longest host name an envelope or event holds.
	MaxHost = 255

	envelopeFixed = magicLen + versionLen + 3*int64Len + lenLen          // 28
	eventFixed    = magicLen + versionLen + 5*int64Len + lenLen + lenLen // 45
)

var (
	envelopeMagic = [magicLen]byte{0xA7, 0x1D}
	eventMagic    = [magicLen]byte{0xA7, 0x1E}
)

// Errors of the decoders.
var (
	// ErrNotEnvelope: the payload does not start with the envelope's magic
	// bytes (a message sent with the audit off, or another format).
	ErrNotEnvelope = errors.New("audit: not an audit envelope")
	// ErrNotEvent: the payload does not start with the event's magic bytes.
	ErrNotEvent = errors.New("audit: not a monitoring event")
	// ErrVersion: the magic matched but the version is not 1.
	ErrVersion = errors.New("audit: unknown version")
	// ErrTruncated: the payload ends inside a field.
	ErrTruncated = errors.New("audit: truncated")
	// ErrInvalid: a field holds a value the format does not allow.
	ErrInvalid = errors.New("audit: invalid field")
)

// Header is an envelope's fields.
type Header struct {
	// Time is when the message was created.
	Time time.Time
	// Session identifies the producer instance; Seq numbers its messages
	// of one topic from 0.
	Session uint64
	Seq     uint64
	// Host is the server that created the message.
	Host string
}

// Len returns the envelope's size in bytes.
func (h Header) Len() int { return envelopeFixed + len(h.Host) }

func checkHost(host string) error {
	if len(host) == 0 || len(host) > MaxHost {
		return fmt.Errorf("%w: host %q has %d bytes; it needs 1 to %d", ErrInvalid, host, len(host), MaxHost)
	}
	return nil
}

// AppendEnvelope appends h's envelope and then payload to dst. It fails only
// for a host of 0 or more than MaxHost bytes.
func AppendEnvelope(dst []byte, h Header, payload []byte) ([]byte, error) {
	if err := checkHost(h.Host); err != nil {
		return dst, err
	}
	dst = append(dst, envelopeMagic[:]...)
	dst = append(dst, Version)
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.Time.UnixNano()))
	dst = binary.BigEndian.AppendUint64(dst, h.Session)
	dst = binary.BigEndian.AppendUint64(dst, h.Seq)
	dst = append(dst, byte(len(h.Host)))
	dst = append(dst, h.Host...)
	return append(dst, payload...), nil
}

// DecodeEnvelope splits an audited payload into its header and the original
// payload (which aliases b). It returns ErrNotEnvelope for a payload without
// the magic, and ErrVersion, ErrTruncated or ErrInvalid for a damaged one.
func DecodeEnvelope(b []byte) (Header, []byte, error) {
	if len(b) < magicLen || b[0] != envelopeMagic[0] || b[1] != envelopeMagic[1] {
		return Header{}, nil, ErrNotEnvelope
	}
	if len(b) < magicLen+versionLen {
		return Header{}, nil, fmt.Errorf("%w: envelope of %d bytes", ErrTruncated, len(b))
	}
	if b[2] != Version {
		return Header{}, nil, fmt.Errorf("%w %d in an envelope", ErrVersion, b[2])
	}
	if len(b) < envelopeFixed {
		return Header{}, nil, fmt.Errorf("%w: envelope of %d bytes, the fixed part needs %d", ErrTruncated, len(b), envelopeFixed)
	}
	var h Header
	h.Time = time.Unix(0, int64(binary.BigEndian.Uint64(b[3:])))
	h.Session = binary.BigEndian.Uint64(b[11:])
	h.Seq = binary.BigEndian.Uint64(b[19:])
	n := int(b[27])
	if n == 0 {
		return Header{}, nil, fmt.Errorf("%w: empty host", ErrInvalid)
	}
	if len(b) < envelopeFixed+n {
		return Header{}, nil, fmt.Errorf("%w: host of %d bytes, %d left", ErrTruncated, n, len(b)-envelopeFixed)
	}
	h.Host = string(b[envelopeFixed : envelopeFixed+n])
	return h, b[envelopeFixed+n:], nil
}

// Event is a monitoring event: how many messages of Topic the producer
// (Host, Session) created in the window [Start, Start+Length).
type Event struct {
	Topic   string
	Host    string
	Session uint64
	// Start is the window's start, a multiple of Length since the epoch.
	Start  time.Time
	Length time.Duration
	// Count messages were created in the window, with sequence numbers
	// First, First+1, ..., First+Count-1.
	Count uint64
	First uint64
}

// Window returns the start of the window of length length that holds t.
func Window(t time.Time, length time.Duration) time.Time {
	ns := t.UnixNano()
	l := int64(length)
	start := ns - ns%l
	if ns < 0 && ns%l != 0 {
		start -= l
	}
	return time.Unix(0, start)
}

// MaxCount is the largest count an event may announce: with every count at
// most 2^63-1 a count fits an int64, and a reader that sums counts with
// overflow checks (consumer/audit) can refuse an event that would wrap.
const MaxCount = math.MaxInt64

// checkCount refuses counts no producer can have: above MaxCount, or
// announcing sequence numbers past 2^64-1. A forged event with count
// 2^64-3 used to read as -3 messages sent and hide 3 missing ones.
func checkCount(count, first uint64) error {
	switch {
	case count > MaxCount:
		return fmt.Errorf("%w: count %d is above %d", ErrInvalid, count, uint64(MaxCount))
	case count > 0 && first+count-1 < first:
		return fmt.Errorf("%w: count %d from sequence number %d runs past 2^64-1", ErrInvalid, count, first)
	}
	return nil
}

// AppendEvent appends e's encoding to dst.
func AppendEvent(dst []byte, e Event) ([]byte, error) {
	if err := checkHost(e.Host); err != nil {
		return dst, err
	}
	if err := wire.ValidateTopic(e.Topic); err != nil {
		return dst, fmt.Errorf("%w: topic %q", ErrInvalid, e.Topic)
	}
	if e.Length <= 0 {
		return dst, fmt.Errorf("%w: window length %v", ErrInvalid, e.Length)
	}
	if err := checkCount(e.Count, e.First); err != nil {
		return dst, err
	}
	dst = append(dst, eventMagic[:]...)
	dst = append(dst, Version)
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.Start.UnixNano()))
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.Length))
	dst = binary.BigEndian.AppendUint64(dst, e.Count)
	dst = binary.BigEndian.AppendUint64(dst, e.First)
	dst = binary.BigEndian.AppendUint64(dst, e.Session)
	dst = append(dst, byte(len(e.Host)))
	dst = append(dst, e.Host...)
	dst = append(dst, byte(len(e.Topic)))
	return append(dst, e.Topic...), nil
}

// DecodeEvent decodes a monitoring event. Bytes after the topic are an
// error (ErrInvalid), so that a payload is either exactly an event or not.
func DecodeEvent(b []byte) (Event, error) {
	if len(b) < magicLen || b[0] != eventMagic[0] || b[1] != eventMagic[1] {
		return Event{}, ErrNotEvent
	}
	if len(b) < magicLen+versionLen {
		return Event{}, fmt.Errorf("%w: event of %d bytes", ErrTruncated, len(b))
	}
	if b[2] != Version {
		return Event{}, fmt.Errorf("%w %d in an event", ErrVersion, b[2])
	}
	const hostAt = eventFixed - lenLen // 44: after the host length
	if len(b) < hostAt {
		return Event{}, fmt.Errorf("%w: event of %d bytes, the fixed part needs %d", ErrTruncated, len(b), eventFixed)
	}
	var e Event
	e.Start = time.Unix(0, int64(binary.BigEndian.Uint64(b[3:])))
	e.Length = time.Duration(binary.BigEndian.Uint64(b[11:]))
	e.Count = binary.BigEndian.Uint64(b[19:])
	e.First = binary.BigEndian.Uint64(b[27:])
	e.Session = binary.BigEndian.Uint64(b[35:])
	if e.Length <= 0 {
		return Event{}, fmt.Errorf("%w: window length %d ns", ErrInvalid, int64(e.Length))
	}
	if err := checkCount(e.Count, e.First); err != nil {
		return Event{}, err
	}
	if e.Start.UnixNano()%int64(e.Length) != 0 {
		return Event{}, fmt.Errorf("%w: window start %d is not a multiple of its length %d", ErrInvalid, e.Start.UnixNano(), int64(e.Length))
	}
	p := hostAt - 1
	n := int(b[p])
	p++
	if n == 0 {
		return Event{}, fmt.Errorf("%w: empty host", ErrInvalid)
	}
	if len(b) < p+n+1 {
		return Event{}, fmt.Errorf("%w: host of %d bytes, %d left", ErrTruncated, n, len(b)-p)
	}
	e.Host = string(b[p : p+n])
	p += n
	m := int(b[p])
	p++
	if len(b) < p+m {
		return Event{}, fmt.Errorf("%w: topic of %d bytes, %d left", ErrTruncated, m, len(b)-p)
	}
	e.Topic = string(b[p : p+m])
	if err := wire.ValidateTopic(e.Topic); err != nil {
		return Event{}, fmt.Errorf("%w: topic %q: %v", ErrInvalid, e.Topic, err)
	}
	if len(b) != p+m {
		return Event{}, fmt.Errorf("%w: %d bytes after the topic", ErrInvalid, len(b)-p-m)
	}
	return e, nil
}
