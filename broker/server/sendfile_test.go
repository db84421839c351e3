//go:build linux

package server

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (sender *net.TCPConn, receiver net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	receiver, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { s.Close(); receiver.Close() })
	return s.(*net.TCPConn), receiver
}

func tempFile(t *testing.T, content []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "segment")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Many sends from one *os.File at once, each at its own offset, each over a
// socket whose small buffer makes sendfile return EAGAIN again and again:
// every receiver gets exactly its bytes, and the file's own position never
// moves.
func TestSendFileConcurrentOffsets(t *testing.T) {
	content := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range content {
		content[i] = byte(rng.Uint32())
	}
	f := tempFile(t, content)

	const senders = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*senders)
	for i := range senders {
		off := int64(i) * 97_123
		n := int64(len(content)) - off - int64(i)*10_000
		s, r := tcpPair(t)
		if err := s.SetWriteBuffer(4096); err != nil {
			t.Fatal(err)
		}
		raw, err := s.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			sent, err := sendFile(raw, f, off, n)
			if err != nil || sent != n {
				errs <- errors.Join(err, errors.New("short send"))
			}
			s.CloseWrite()
		}()
		go func() {
			defer wg.Done()
			got, err := io.ReadAll(r)
			if err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(got, content[off:off+n]) {
				errs <- errors.New("receiver got the wrong bytes")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if pos, err := f.Seek(0, io.SeekCurrent); err != nil || pos != 0 {
		t.Fatalf("file position moved to %d (%v)", pos, err)
	}
}

// A file shorter than announced is an error, never a silent short response.
func TestSendFileShortFile(t *testing.T) {
	f := tempFile(t, []byte("0123456789"))
	s, r := tcpPair(t)
	raw, err := s.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	sent, err := sendFile(raw, f, 4, 100)
	if !errors.Is(err, io.ErrUnexpectedEOF) || sent != 6 {
		t.Fatalf("sent %d, err %v", sent, err)
	}
	got := make([]byte, 6)
	if _, err := io.ReadFull(r, got); err != nil || string(got) != "456789" {
		t.Fatalf("got %q, %v", got, err)
	}
}

// A client that never reads cannot hold a sender for ever: the write
// deadline ends the wait for writability.
func TestSendFileHonoursWriteDeadline(t *testing.T) {
	f := tempFile(t, make([]byte, 8<<20))
	s, _ := tcpPair(t)
	raw, err := s.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetWriteDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	sent, err := sendFile(raw, f, 0, 8<<20)
	if !errors.Is(err, os.ErrDeadlineExceeded) || sent == 0 || sent >= 8<<20 {
		t.Fatalf("sent %d, err %v", sent, err)
	}
}
