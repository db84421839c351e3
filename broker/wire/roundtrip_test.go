package wire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"testing/iotest"
	"time"
)

// respFrame returns a response frame with code and body.
func respFrame(code ErrorCode, body []byte) []byte {
	return append(AppendResponseHeader(nil, code, len(body)), body...)
}

// sized returns a response header whose size field is size, and no body.
func sized(size int32) []byte {
	return []byte{byte(size >> 24), byte(size >> 16), byte(size >> 8), byte(size), 0, 0}
}

// rw is a connection double: reads come from r, writes go to w.
type rw struct {
	r        io.Reader
	w        bytes.Buffer
	deadline time.Time
}

func (c *rw) Read(p []byte) (int, error)    { return c.r.Read(p) }
func (c *rw) Write(p []byte) (int, error)   { return c.w.Write(p) }
func (c *rw) SetDeadline(t time.Time) error { c.deadline = t; return nil }
func (c *rw) readFrom(b []byte, one bool) *rw {
	c.r = bytes.NewReader(b)
	if one {
		c.r = iotest.OneByteReader(c.r)
	}
	return c
}

func TestReadResponseErrors(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 100)
	for _, c := range []struct {
		name string
		in   []byte
		max  int
		want error
	}{
		{"closed before the frame", nil, 1 << 10, io.EOF},
		{"header cut", respFrame(CodeNone, body)[:3], 1 << 10, io.ErrUnexpectedEOF},
		{"body cut", respFrame(CodeNone, body)[:50], 1 << 10, io.ErrUnexpectedEOF},
		{"body missing", respFrame(CodeNone, body)[:ResponseHeaderLen], 1 << 10, io.ErrUnexpectedEOF},
		{"size 1", sized(1), 1 << 10, ErrMalformedResponse},
		{"size 0", sized(0), 1 << 10, ErrMalformedResponse},
		{"size negative", sized(-1), 1 << 10, ErrMalformedResponse},
		{"size above max", respFrame(CodeNone, body), 101, ErrMalformedResponse},
		{"size at max", respFrame(CodeNone, body), 102, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var rr ResponseReader
			_, got, err := rr.ReadResponse(bytes.NewReader(c.in), c.max)
			if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if err == nil && !bytes.Equal(got, body) {
				t.Fatalf("body %q", got)
			}
			if errors.Is(err, ErrMalformedResponse) && cap(rr.buf) != 0 {
				t.Fatalf("allocated %d bytes for a bad size", cap(rr.buf))
			}
			// Exchange reads the same frames alike.
			_, _, err = rr.Exchange(new(rw).readFrom(c.in, false), nil, c.max)
			if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
				t.Fatalf("Exchange: err = %v, want %v", err, c.want)
			}
		})
	}
}

// TestReadResponsePipelined reads frames that follow one another on a
// connection one by one, into one buffer.
func TestReadResponsePipelined(t *testing.T) {
	in := append(respFrame(CodeNone, []byte("first answer")), respFrame(CodeOffsetOutOfRange, []byte("2nd"))...)
	r := iotest.HalfReader(bytes.NewReader(in))
	var rr ResponseReader
	code, body, err := rr.ReadResponse(r, 100)
	if err != nil || code != CodeNone || string(body) != "first answer" {
		t.Fatalf("first: %v %q %v", code, body, err)
	}
	first := &body[0]
	code, body, err = rr.ReadResponse(r, 100)
	if err != nil || code != CodeOffsetOutOfRange || string(body) != "2nd" {
		t.Fatalf("second: %v %q %v", code, body, err)
	}
	if &body[0] != first {
		t.Error("the second body is not in the first one's buffer")
	}
	if _, _, err := rr.ReadResponse(r, 100); err != io.EOF {
		t.Errorf("after the last frame: %v, want io.EOF", err)
	}
	// The package function gives each body a buffer of its own.
	r = bytes.NewReader(in)
	_, b1, err1 := ReadResponse(r, 100)
	_, b2, err2 := ReadResponse(r, 100)
	if err1 != nil || err2 != nil || string(b1) != "first answer" || string(b2) != "2nd" {
		t.Fatalf("ReadResponse: %q %v, %q %v", b1, err1, b2, err2)
	}
}

func TestExchange(t *testing.T) {
	req := []byte("request frame")
	small := bytes.Repeat([]byte("s"), 10)
	large := bytes.Repeat([]byte("L"), 3*minReadAhead)
	var rr ResponseReader
	for _, c := range []struct {
		name string
		body []byte
		one  bool // arrives one byte per read
	}{
		{"small", small, false},
		{"small, a byte at a time", small, true},
		{"larger than the buffer", large, false},
		{"larger, a byte at a time", large, true},
		{"small again", small, false},
		{"empty", nil, false},
	} {
		conn := new(rw).readFrom(respFrame(CodeInvalidMessage, c.body), c.one)
		code, body, err := rr.Exchange(conn, req, 4*minReadAhead)
		if err != nil || code != CodeInvalidMessage || !bytes.Equal(body, c.body) {
			t.Fatalf("%s: %v, %d bytes, %v", c.name, code, len(body), err)
		}
		if !bytes.Equal(conn.w.Bytes(), req) {
			t.Fatalf("%s: wrote %q", c.name, conn.w.Bytes())
		}
	}
	if cap(rr.buf) != ResponseHeaderLen+len(large) {
		t.Errorf("buffer of %d bytes, want it grown once to %d and kept", cap(rr.buf), ResponseHeaderLen+len(large))
	}
	// A byte after the response, when none was asked for.
	_, _, err := rr.Exchange(new(rw).readFrom(append(respFrame(CodeNone, small), 0), false), req, 1<<10)
	if !errors.Is(err, ErrMalformedResponse) {
		t.Errorf("trailing byte: %v, want ErrMalformedResponse", err)
	}
}

func TestRoundTripDeadline(t *testing.T) {
	var rr ResponseReader
	conn := new(rw).readFrom(respFrame(CodeNone, []byte("ok")), false)
	at := time.Now().Add(time.Minute)
	if _, body, err := rr.RoundTrip(conn, []byte("req"), at, 10); err != nil || string(body) != "ok" || !conn.deadline.Equal(at) {
		t.Fatalf("%q %v, deadline %v", body, err, conn.deadline)
	}
	// A real connection whose peer never answers: the deadline ends the
	// round trip.
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	go io.Copy(io.Discard, server)
	start := time.Now()
	_, _, err := rr.RoundTrip(client, []byte("req"), time.Now().Add(50*time.Millisecond), 10)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
}

// TestBadSizeFailsAtOnce: a size field below the error code's width fails
// as soon as it is read, not after waiting for a header the peer never
// sends (the consumer's TestBadResponsesAreProtocolErrors: a 5-byte frame
// of size 1 on a connection left open).
func TestBadSizeFailsAtOnce(t *testing.T) {
	for name, read := range map[string]func(rr *ResponseReader, c net.Conn) error{
		"ReadResponse": func(rr *ResponseReader, c net.Conn) error {
			_, _, err := rr.ReadResponse(c, 100)
			return err
		},
		"RoundTrip": func(rr *ResponseReader, c net.Conn) error {
			_, _, err := rr.RoundTrip(c, []byte("req"), time.Now().Add(time.Minute), 100)
			return err
		},
	} {
		client, server := net.Pipe()
		go func() {
			buf := make([]byte, 3)
			if name == "RoundTrip" {
				io.ReadFull(server, buf)
			}
			server.Write([]byte{0, 0, 0, 1, 0})
		}()
		if err := read(new(ResponseReader), client); !errors.Is(err, ErrMalformedResponse) {
			t.Errorf("%s: %v, want ErrMalformedResponse", name, err)
		}
		client.Close()
		server.Close()
	}
}

// FuzzReadResponse feeds arbitrary bytes, split at every read, to both
// readers: no panic, a body only when the size field allows it, the code
// and body as the input has them, and the two readers agree. (It was the
// producer's FuzzReadResponse, when the producer had a reader of its own.)
func FuzzReadResponse(f *testing.F) {
	f.Add(respFrame(CodeNone, []byte("body")), 10)
	f.Add(respFrame(CodeOffsetOutOfRange, nil), 2)
	f.Add(AppendProduceAcksResponse(nil, []ProduceResult{{Topic: "t", Code: CodeNotEnoughReplicas, Offset: -1}}), 1<<10)
	f.Add(AppendMetadataResponse(nil, &MetadataResponse{}), 1<<10)
	f.Add(AppendErrorResponse(nil, CodeLeaderNotAvailable), 1<<10)
	f.Add([]byte{0, 0, 0, 1, 0}, 1<<10)
	f.Add(sized(-7), 100)
	f.Add(append(respFrame(CodeNone, []byte("a")), 1, 2), 100)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 0 || max > 1<<20 {
			return
		}
		var a, b ResponseReader
		codeA, bodyA, errA := a.ReadResponse(iotest.HalfReader(bytes.NewReader(in)), max)
		codeB, bodyB, errB := b.Exchange(new(rw).readFrom(in, true), nil, max)
		// Exchange reading a byte at a time sees no trailing bytes: the
		// two agree on everything.
		if (errA == nil) != (errB == nil) || codeA != codeB || !bytes.Equal(bodyA, bodyB) {
			t.Fatalf("ReadResponse %v %q %v, Exchange %v %q %v", codeA, bodyA, errA, codeB, bodyB, errB)
		}
		if errA != nil {
			if len(in) >= ResponseHeaderLen+max && errA == io.ErrUnexpectedEOF {
				t.Fatalf("short read on %d bytes", len(in))
			}
			return
		}
		if len(bodyA)+2 > max || len(bodyA)+ResponseHeaderLen > len(in) {
			t.Fatalf("a body of %d bytes from %d bytes under max %d", len(bodyA), len(in), max)
		}
		if want := ErrorCode(int16(in[4])<<8 | int16(in[5])); codeA != want {
			t.Fatalf("code %d, want %d", codeA, want)
		}
		if !bytes.Equal(bodyA, in[ResponseHeaderLen:ResponseHeaderLen+len(bodyA)]) {
			t.Fatal("body differs from the input")
		}
	})
}
