package server

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func TestReadBufferFillAcrossReads(t *testing.T) {
	data := []byte("0123456789abcdefghij")
	b := newReadBuffer(iotest.OneByteReader(bytes.NewReader(data)), 8)
	if err := b.fill(5); err != nil {
		t.Fatal(err)
	}
	if got := string(b.buffered()); got != "01234" {
		t.Fatalf("buffered %q after fill(5) from one-byte reads", got)
	}
	b.discard(3)
	// 2 bytes left at offset 3: filling 8 must move them to the front.
	if err := b.fill(8); err != nil {
		t.Fatal(err)
	}
	if got := string(b.buffered()); got != "3456789a" {
		t.Fatalf("buffered %q, want 3456789a", got)
	}
	b.grow(16)
	if b.size() != 16 || string(b.buffered()) != "3456789a" {
		t.Fatalf("after grow: size %d, buffered %q", b.size(), b.buffered())
	}
	if err := b.fill(12); err != nil {
		t.Fatal(err)
	}
	if got := string(b.buffered()); got != "3456789abcde" {
		t.Fatalf("buffered %q after growing", got)
	}
	b.grow(4) // never shrinks
	if b.size() != 16 {
		t.Fatalf("size %d after grow(4)", b.size())
	}
}

func TestReadBufferRead(t *testing.T) {
	b := newReadBuffer(bytes.NewReader([]byte("0123456789")), 4)
	if err := b.fill(4); err != nil {
		t.Fatal(err)
	}
	b.discard(1)
	p := make([]byte, 7) // 3 buffered, 4 straight from the reader
	if n, err := b.read(p); n != 7 || err != nil || string(p) != "1234567" {
		t.Fatalf("read: %d, %v, %q", n, err, p)
	}
	if len(b.buffered()) != 0 {
		t.Fatalf("%d bytes still buffered", len(b.buffered()))
	}
	if n, err := b.read(make([]byte, 5)); n != 2 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read past the end: %d, %v", n, err)
	}
	if n, err := b.read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("read at the end: %d, %v", n, err)
	}
}

func TestReadBufferEnd(t *testing.T) {
	b := newReadBuffer(bytes.NewReader([]byte("abc")), 8)
	if err := b.fill(3); err != nil {
		t.Fatal(err)
	}
	if err := b.fill(4); !errors.Is(err, io.EOF) || string(b.buffered()) != "abc" {
		t.Fatalf("fill past the end: %v, buffered %q", err, b.buffered())
	}
	b = newReadBuffer(iotest.ErrReader(errors.New("boom")), 8)
	if err := b.fill(1); err == nil || err.Error() != "boom" {
		t.Fatalf("fill from a failing reader: %v", err)
	}
	b = newReadBuffer(emptyReader{}, 8)
	if err := b.fill(1); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("fill from a reader returning nothing: %v", err)
	}
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }
